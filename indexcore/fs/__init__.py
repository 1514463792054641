"""Files as a broker's log dir needs them written and read (no Kafka counterpart: Kafka relies on the JVM).

``atomic_file``: replacement through a temporary file, fsync, rename, directory fsync, keeping owner, group and
mode. ``file_access``: opening regular files only, so a FIFO or a device named like a segment never hangs a run.
"""
