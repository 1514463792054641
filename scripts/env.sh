# Sourced by the scripts: a Python 3.11+ virtualenv in .venv with segdex installed (editable, dev extras).
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$PWD/.venv/bin/python}"
# An editable install: setuptools' import finder maps segdex.indexcore, segdex.pipelines and segdex.jobs to the
# top-level folders (package-dir in pyproject.toml); no symlink and no sys.path entry is needed.
segdex_pip_install_editable() {
  .venv/bin/python -m pip install -q -e "$1"
}

# The runtime jars a pom names, copied by Maven into DIR once per change of the pom (a stamp file in DIR):
#   segdex_maven_jars POM DIR NEED WHAT [MVN-ARG...]
# NEED=required: no Maven or a failed fetch is an error (the tests need them); NEED=optional: a warning naming
# WHAT needs them.
segdex_maven_jars() {
  local pom="$1" dir="$2" need="$3" what="$4" stamp="$2/.fetched"
  shift 4
  if [ -f "$stamp" ] && [ ! "$pom" -nt "$stamp" ]; then return 0; fi
  if ! command -v mvn >/dev/null 2>&1; then
    echo "segdex: mvn not found: the jars of $pom not fetched ($what needs them)" >&2
    [ "$need" = optional ]; return
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  if mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DoutputDirectory="$PWD/$dir${MAVEN_SUBDIR:-}" \
      -DincludeScope=runtime "$@" >"$dir/mvn.log" 2>&1; then
    touch "$stamp"
  else
    [ "$need" = optional ] || cat "$dir/mvn.log" >&2
    echo "segdex: could not fetch the jars of $pom with Maven ($what needs them)" >&2
    [ "$need" = optional ]
  fi
}

# Delta Lake's Spark jars in .venv/delta-jars: segdex's Spark sessions load them for SEGDEX_DELTA_WRITER=spark.
segdex_delta_jars() {
  segdex_maven_jars scripts/delta/pom.xml .venv/delta-jars optional "SEGDEX_DELTA_WRITER=spark" \
    -DincludeGroupIds=io.delta
}

# Hadoop's s3a filesystem (hadoop-aws matching pyspark's Hadoop, and the AWS SDK bundle it names) in
# .venv/s3a-jars: segdex's Spark sessions load them to read tables on object storage (s3://, s3a://).
segdex_s3a_jars() {
  segdex_maven_jars scripts/s3a/pom.xml .venv/s3a-jars optional "Spark's reads of s3:// tables"
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

# s3proxy's jars in .venv/s3proxy/libs: the S3-compatible server the tests write shared Delta tables into
# (tests/support/s3_harness.py).
segdex_s3proxy() {
  MAVEN_SUBDIR=/libs segdex_maven_jars tests/s3/pom.xml .venv/s3proxy required "the tests of tables on object storage"
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
