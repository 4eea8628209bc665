#!/usr/bin/env bash
# A single-node Apache Kafka (KRaft: broker and controller in one JVM) on 127.0.0.1, for the
# tests, the benchmarks and anyone trying sleet against a real broker.
#
#   scripts/kafka.sh fetch                      fetch the jars (Maven Central) into the cache
#   scripts/kafka.sh start [--port P] [--dir D] start a broker; prints its address
#   scripts/kafka.sh stop  [--dir D]            stop the broker started in D (by its PID)
#   scripts/kafka.sh status [--dir D]           say whether it runs
#   scripts/kafka.sh tool CLASS ARGS...         run a Kafka tool class with the broker's jars
#
# The jars live in ${SLEET_CACHE:-~/.cache/sleet}/kafka-<version>/libs, outside target/, so
# `cargo clean` does not refetch them. A broker's state (data, logs, PID) lives in its --dir,
# by default target/kafka-<port>; `start` on a dir whose broker already runs prints its
# address and leaves it alone.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version=4.1.1
cache="${SLEET_CACHE:-$HOME/.cache/sleet}/kafka-$version"
libs="$cache/libs"
port=9092
dir=""

die() { echo "scripts/kafka.sh: $*" >&2; exit 1; }

fetch() {
    if [ -f "$libs/.complete" ]; then return; fi
    command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch Kafka's jars; install it (Debian: apt-get install maven)"
    command -v java >/dev/null || die "Java 17 or newer is needed to run Kafka; install it (Debian: apt-get install openjdk-17-jre-headless)"
    echo "scripts/kafka.sh: fetching Kafka $version jars into $libs" >&2
    rm -rf "$libs.partial"
    mvn -q -B -f "$root/scripts/kafka/pom.xml" dependency:copy-dependencies \
        -Dkafka.version="$version" -DincludeScope=runtime -DoutputDirectory="$libs.partial" >&2 \
        || die "Maven could not fetch the jars (see above)"
    rm -rf "$libs"
    mv "$libs.partial" "$libs"
    touch "$libs/.complete"
}

parse_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --port) port="$2"; shift 2 ;;
            --dir) dir="$2"; shift 2 ;;
            *) die "unknown argument '$1'" ;;
        esac
    done
    [ -n "$dir" ] || dir="$root/target/kafka-$port"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
}

running_pid() {
    local pid
    [ -f "$dir/broker.pid" ] || return 1
    pid="$(cat "$dir/broker.pid")"
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

start() {
    fetch
    if running_pid >/dev/null; then
        cat "$dir/address"
        return
    fi
    local controller_port=$((port + 1))
    local log_dir="$dir/data"
    cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$log_dir
num.partitions=2
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
# Bounded by size, so a long benchmark cannot fill the disk: 2 GiB per partition. Not by
# time: retention judges a record by its own timestamp, and tests write records stamped years
# ago (fixed event times), which a time bound deleted whenever the broker's 5-minute
# retention check fell inside the test.
log.retention.bytes=2147483648
log.retention.ms=-1
log.segment.bytes=268435456
EOF
    cat >"$dir/log4j2.properties" <<EOF
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$dir/broker.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
logger.kafka.name=kafka
logger.kafka.level=WARN
logger.apache.name=org.apache.kafka
logger.apache.level=WARN
EOF
    local java_opts=(-Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true
        -Dlog4j2.configurationFile="$dir/log4j2.properties")
    if [ ! -f "$log_dir/meta.properties" ]; then
        java "${java_opts[@]}" -cp "$libs/*" kafka.tools.StorageTool format \
            --cluster-id c2xlZXQtc2xlZXQtc2xlZQ --config "$dir/server.properties" >"$dir/format.log" 2>&1 \
            || { cat "$dir/format.log" >&2; die "formatting the broker's storage in $log_dir failed"; }
    fi
    nohup java "${java_opts[@]}" -cp "$libs/*" kafka.Kafka "$dir/server.properties" \
        >"$dir/broker.out" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$dir/broker.pid"
    echo "127.0.0.1:$port" >"$dir/address"
    # Ready when the listener accepts connections; bounded at 60 s.
    for _ in $(seq 1 300); do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -20 "$dir/broker.out" "$dir/broker.log" >&2 2>/dev/null || true
            die "the broker exited while starting (logs in $dir)"
        fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            cat "$dir/address"
            return
        fi
        sleep 0.2
    done
    kill "$pid" 2>/dev/null || true
    die "the broker did not listen on 127.0.0.1:$port within 60 s (logs in $dir)"
}

stop() {
    local pid
    if ! pid="$(running_pid)"; then
        rm -f "$dir/broker.pid"
        return
    fi
    kill "$pid"
    for _ in $(seq 1 150); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$dir/broker.pid"; return; }
        sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/broker.pid"
}

command="${1:-}"
[ $# -gt 0 ] && shift
case "$command" in
    fetch) fetch; echo "$libs" ;;
    start) parse_args "$@"; start ;;
    stop) parse_args "$@"; stop ;;
    status) parse_args "$@"; if pid="$(running_pid)"; then echo "running, pid $pid, $(cat "$dir/address")"; else echo "stopped"; exit 3; fi ;;
    tool) fetch; class="${1:?a tool class, e.g. org.apache.kafka.tools.ConsoleProducer}"; shift
        exec java -Xmx512m -Dlog4j2.level=WARN -cp "$libs/*" "$class" "$@" ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; [ -z "$command" ] || die "unknown command '$command'"; exit 1 ;;
esac
