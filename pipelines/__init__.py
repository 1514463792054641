"""Spark transformations built on indexcore: discover, rebuild/verify in parallel, Delta metadata."""
