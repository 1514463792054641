# Sourced by the scripts: a Python 3.11+ virtualenv in .venv with segdex installed (editable, dev extras).
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$PWD/.venv/bin/python}"
# An editable install: setuptools' import finder maps segdex.indexcore, segdex.pipelines and segdex.jobs to the
# top-level folders (package-dir in pyproject.toml); no symlink and no sys.path entry is needed.
segdex_pip_install_editable() {
  .venv/bin/python -m pip install -q -e "$1"
}

# Delta Lake's Spark jars (scripts/delta/pom.xml) in .venv/delta-jars, fetched with Maven once per pom change;
# segdex's Spark sessions load them for SEGDEX_DELTA_WRITER=spark. Without Maven or network, a warning.
segdex_delta_jars() {
  local dir=.venv/delta-jars stamp=.venv/delta-jars/.fetched
  if [ -f "$stamp" ] && [ ! scripts/delta/pom.xml -nt "$stamp" ]; then return 0; fi
  if ! command -v mvn >/dev/null 2>&1; then
    echo "segdex: mvn not found: Delta Lake's Spark jars not fetched (SEGDEX_DELTA_WRITER=spark needs them)" >&2
    return 0
  fi
  rm -rf "$dir"
  if mvn -q -B -Dstyle.color=never -f scripts/delta/pom.xml dependency:copy-dependencies -DoutputDirectory="$PWD/$dir" \
      -DincludeScope=runtime -DincludeGroupIds=io.delta >/dev/null; then
    touch "$stamp"
  else
    echo "segdex: could not fetch Delta Lake's Spark jars with Maven (SEGDEX_DELTA_WRITER=spark needs them)" >&2
  fi
}

# Hadoop's s3a filesystem (scripts/s3a/pom.xml: hadoop-aws matching pyspark's Hadoop, and the AWS SDK bundle it
# names) in .venv/s3a-jars, fetched with Maven once per pom change; segdex's Spark sessions load them to read tables
# on object storage (s3://, s3a://). Without Maven or network, a warning.
segdex_s3a_jars() {
  local dir=.venv/s3a-jars stamp=.venv/s3a-jars/.fetched
  if [ -f "$stamp" ] && [ ! scripts/s3a/pom.xml -nt "$stamp" ]; then return 0; fi
  if ! command -v mvn >/dev/null 2>&1; then
    echo "segdex: mvn not found: Hadoop's s3a jars not fetched (Spark reads of s3:// tables need them)" >&2
    return 0
  fi
  rm -rf "$dir"
  if mvn -q -B -Dstyle.color=never -f scripts/s3a/pom.xml dependency:copy-dependencies -DoutputDirectory="$PWD/$dir" \
      -DincludeScope=runtime >/dev/null; then
    touch "$stamp"
  else
    echo "segdex: could not fetch Hadoop's s3a jars with Maven (Spark reads of s3:// tables need them)" >&2
  fi
}

# Apache Kafka's release jars for the tests (tests/kafka/pom.xml), one folder per version in .venv/kafka/<version>/:
# libs/ (the broker, its storage tool, the clients) and oracle/ (tests/kafka/oracle/KafkaOracle.java compiled
# against them). Fetched once (Maven's local repository caches them), rebuilt when the pom or the oracle changes.
# The newest 4.x and 3.9.x releases that resolve on Maven Central; both add kafka-tools (kafka-consumer-groups,
# kafka-transactions; in 4.x also kafka-dump-log).
SEGDEX_KAFKA_VERSIONS="${SEGDEX_KAFKA_VERSIONS:-4.4.0 3.9.2}"
export SEGDEX_KAFKA_VERSIONS
segdex_kafka() {
  local version dir stamp profile
  for version in $SEGDEX_KAFKA_VERSIONS; do
    dir=.venv/kafka/$version stamp=.venv/kafka/$version/.built
    if [ -f "$stamp" ] && [ ! tests/kafka/pom.xml -nt "$stamp" ] \
        && [ ! tests/kafka/oracle/KafkaOracle.java -nt "$stamp" ]; then continue; fi
    case "$version" in 3.*) profile=kafka3 ;; *) profile=kafka4 ;; esac
    rm -rf "$dir"
    mkdir -p "$dir/oracle"
    mvn -q -B -Dstyle.color=never -f tests/kafka/pom.xml -P"$profile" -Dkafka.version="$version" \
      dependency:copy-dependencies -DoutputDirectory="$PWD/$dir/libs" -DincludeScope=runtime \
      >"$dir/mvn.log" 2>&1 || { cat "$dir/mvn.log" >&2; echo "segdex: could not fetch Kafka $version" >&2; return 1; }
    javac -nowarn -d "$dir/oracle" -cp "$dir/libs/*" tests/kafka/oracle/KafkaOracle.java
    touch "$stamp"
  done
}

# s3proxy's jars (tests/s3/pom.xml) in .venv/s3proxy/libs: the S3-compatible server the tests write shared Delta
# tables into (tests/support/s3_harness.py). Fetched once per pom change (Maven's local repository caches them).
segdex_s3proxy() {
  local dir=.venv/s3proxy stamp=.venv/s3proxy/.fetched
  if [ -f "$stamp" ] && [ ! tests/s3/pom.xml -nt "$stamp" ]; then return 0; fi
  rm -rf "$dir"
  mkdir -p "$dir"
  mvn -q -B -Dstyle.color=never -f tests/s3/pom.xml dependency:copy-dependencies -DoutputDirectory="$PWD/$dir/libs" \
    -DincludeScope=runtime >"$dir/mvn.log" 2>&1 || { cat "$dir/mvn.log" >&2; echo "segdex: could not fetch s3proxy" >&2; return 1; }
  touch "$stamp"
}

segdex_venv() {
  local py
  py="$(command -v python3.11 || command -v python3)"
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv
  fi
  local stamp=.venv/.segdex-installed
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
      || [ -n "$(find indexcore -name '*.c' -newer "$stamp" 2>/dev/null)" ]; then
    .venv/bin/python -m pip install -q --upgrade pip setuptools wheel
    segdex_pip_install_editable ".[dev]"
    touch "$stamp"
  fi
  segdex_delta_jars
  segdex_s3a_jars
  segdex_class_archive
}

# Class-data sharing archives of Spark's JVMs (pipelines/class_archive.py): an embedded Spark starts in half the
# time. Rebuilt after each install (another pyspark, another JDK); without them Spark starts as usual.
segdex_class_archive() {
  local archive=.venv/segdex-spark-driver.jsa
  if [ -f "$archive" ] && [ ! .venv/.segdex-installed -nt "$archive" ]; then return 0; fi
  .venv/bin/python -m segdex.pipelines.class_archive || true
}
