"""Entry points: the ``segdex`` CLI and spark-submit scripts. They parse arguments and call pipelines."""
