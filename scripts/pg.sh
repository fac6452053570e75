#!/usr/bin/env bash
# scripts/pg.sh — a real PostgreSQL 17 + pgvector 0.8 for strata's tests.
#
# Debian bookworm (this machine) ships no pgvector package, but Debian's trixie
# suite, served by the same mirror, has postgresql-17 and
# postgresql-17-pgvector. This script builds a minimal trixie root with
# `debootstrap --variant=minbase` once (about a minute), caches it outside the
# repository, and runs PostgreSQL from it through chroot (under a second).
#
# Usage:
#   scripts/pg.sh up        build the root if needed, start the server, create
#                           database strata_test with the vector extension and
#                           print  STRATA_TEST_PG_DSN=postgres://...  on stdout
#                           (progress goes to stderr). Running it again while
#                           the server is up is fine: it only prints the DSN.
#   scripts/pg.sh down      stop the server (pg_ctl stop -m fast) and remove its
#                           data directory. Idempotent.
#   scripts/pg.sh status    say whether the server is up; exit 0 if it is, 3 if
#                           it is not.
#   scripts/pg.sh env       print  export STRATA_TEST_PG_DSN=...  (for eval).
#   scripts/pg.sh stop [fast|immediate]
#                           stop the server but keep its data directory;
#                           "immediate" is a crash (no checkpoint, WAL replay
#                           on the next start). For fault tests.
#   scripts/pg.sh start     start the kept data directory again (after stop).
#   scripts/pg.sh build     only build (or verify) the cached root.
#   scripts/pg.sh with CMD...
#                           up, run CMD with STRATA_TEST_PG_DSN exported, then
#                           down, whatever CMD does (trap); exits with CMD's
#                           status. Use it from make/CI so `down` always runs.
#   scripts/pg.sh psql [ARGS...]
#                           psql on strata_test inside the root (debugging).
#   scripts/pg.sh mirror    print the Debian mirror a build would use, or fail
#                           saying why there is none.
#
# Environment:
#   STRATA_PG_ROOT   cached trixie root   (default /var/cache/strata/pg-trixie)
#   STRATA_PG_PORT   TCP port on 127.0.0.1 (default 55432)
#   STRATA_PG_DB     database name        (default strata_test)
#   STRATA_PG_SHARED_BUFFERS  shared_buffers (default 128MB, the engine's own;
#                    make bench-scale sets 2GB so a 50k-message resource's
#                    tables and indexes, about 1.8 GB, are read from memory)
#   STRATA_PG_EFFECTIVE_CACHE_SIZE  the planner's cache estimate (default 4GB)
#   STRATA_PG_MIRROR Debian mirror        (default: the first Debian URI that the
#                    host's apt configuration lists for a main suite, from
#                    sources.list, sources.list.d/*.list or *.sources; no
#                    built-in fallback: without one the build stops and says so)
#   STRATA_APT_DIR   apt configuration directory read for the mirror
#                    (default /etc/apt; for testing `pg.sh mirror`)
#
# Several instances can run side by side from one root: each port has its own
# data directory (/tmp/strata-pg-<port> inside the root) and socket
# (/tmp/.s.PGSQL.<port> inside the root). Auth is trust, bound to 127.0.0.1
# only: this is a disposable test server, never a production setup.
#
# Requirements: root (debootstrap, chroot and mount need it). On a fresh
# machine the script runs `apt-get update` once and installs debootstrap.
set -euo pipefail

ROOT=${STRATA_PG_ROOT:-/var/cache/strata/pg-trixie}
PORT=${STRATA_PG_PORT:-55432}
DB=${STRATA_PG_DB:-strata_test}
APT_DIR=${STRATA_APT_DIR:-/etc/apt}
PGVER=17
SUITE=trixie
# Bump ROOT_VERSION whenever the build recipe changes: a root whose marker
# differs is rebuilt.
ROOT_VERSION="strata-pg-root v1 ${SUITE} postgresql-${PGVER} pgvector"
MARKER="$ROOT/.strata-pg-root"
BIN=/usr/lib/postgresql/$PGVER/bin
DATA=/tmp/strata-pg-$PORT # inside the root
LOG=/tmp/strata-pg-$PORT.log
TEMPLATE=/var/lib/strata-pg-template # inside the root, shared by all ports
LOCK="${ROOT%/}.lock"

DSN="postgres://postgres@127.0.0.1:${PORT}/${DB}?sslmode=disable"

log() { printf 'pg.sh: %s\n' "$*" >&2; }
die() {
	printf 'pg.sh: error: %s\n' "$*" >&2
	exit 1
}

need_root() {
	[ "$(id -u)" = 0 ] || die "must run as root (debootstrap/chroot/mount)"
}

validate_env() {
	case $PORT in
	'' | *[!0-9]*) die "STRATA_PG_PORT must be a number, got '$PORT'" ;;
	esac
	case $DB in
	'' | *[!A-Za-z0-9_]*) die "STRATA_PG_DB must match [A-Za-z0-9_]+, got '$DB'" ;;
	esac
	case $ROOT in
	/*) ;;
	*) die "STRATA_PG_ROOT must be an absolute path, got '$ROOT'" ;;
	esac
	[ "$ROOT" != / ] || die "STRATA_PG_ROOT must not be /"
}

# lock serialises builds, starts and stops that share one root.
lock() {
	mkdir -p "$(dirname "$LOCK")"
	exec 9>"$LOCK"
	flock 9
}

# in_root runs a command inside the root as the postgres user.
# fd 9 (the lock) is closed for it: a postmaster that inherited it would
# hold the lock for its whole life.
in_root() {
	chroot "$ROOT" /usr/sbin/runuser -u postgres -- "$@" 9>&-
}

# mirror picks the Debian mirror: STRATA_PG_MIRROR, else the first URI of the
# host's apt configuration that serves a main Debian suite (a plain codename
# such as bookworm: not -security, -updates or a third-party repository), in
# the order apt reads it: $APT_DIR/sources.list, then the *.list (one-line
# format) and *.sources (deb822) files of $APT_DIR/sources.list.d, by name.
# There is no built-in fallback: a machine without one must say which mirror
# to use, so the root is never built from a mirror nobody chose.
mirror() {
	if [ -n "${STRATA_PG_MIRROR:-}" ]; then
		echo "$STRATA_PG_MIRROR"
		return
	fi
	local f uri
	for f in "$APT_DIR/sources.list" "$APT_DIR"/sources.list.d/*; do
		[ -f "$f" ] || continue
		case $f in
		*/sources.list | *.list) uri=$(oneline_mirror <"$f") ;;
		*.sources) uri=$(deb822_mirror <"$f") ;;
		*) continue ;; # apt ignores other names too
		esac
		if [ -n "$uri" ]; then
			echo "$uri"
			return
		fi
	done
	die "no Debian mirror in the apt configuration ($APT_DIR/sources.list, $APT_DIR/sources.list.d/*.list, $APT_DIR/sources.list.d/*.sources): set STRATA_PG_MIRROR=http://<a Debian mirror>/debian"
}

# oneline_mirror reads a one-line-format sources file
#   deb [ option=value ... ] URI SUITE COMPONENT...
# and prints the URI of the first deb line for a main Debian suite.
oneline_mirror() {
	awk '
		{ sub(/#.*/, "") }
		$1 == "deb" {
			line = $0
			sub(/^[ \t]*deb[ \t]+/, "", line)
			if (substr(line, 1, 1) == "[") sub(/^\[[^]]*\][ \t]*/, "", line)
			split(line, w, /[ \t]+/)
			if (w[1] ~ /\/debian\/?$/ && w[2] ~ /^[a-z]+$/) { print w[1]; exit }
		}
	'
}

# deb822_mirror reads a deb822 sources file (stanzas separated by blank lines;
# field names are case-insensitive; a line starting with white space continues
# the previous field) and prints the first Debian URI of the first enabled deb
# stanza that lists a main suite.
deb822_mirror() {
	awk '
		function flush(   n, i, u, s, main) {
			if (!found && enabled != "no" && (" " types " ") ~ /[ \t]deb[ \t]/) {
				main = 0
				n = split(suites, s, /[ \t]+/)
				for (i = 1; i <= n; i++) if (s[i] ~ /^[a-z]+$/) main = 1
				n = split(uris, u, /[ \t]+/)
				for (i = 1; main && i <= n; i++) if (u[i] ~ /\/debian\/?$/) { print u[i]; found = 1; break }
			}
			types = ""; uris = ""; suites = ""; enabled = ""; field = ""
		}
		/^#/ { next }
		/^[ \t]*$/ { flush(); next }
		/^[ \t]/ {
			if (field == "uris") uris = uris " " $0
			else if (field == "suites") suites = suites " " $0
			else if (field == "types") types = types " " $0
			next
		}
		{
			c = index($0, ":")
			field = tolower(substr($0, 1, c - 1))
			value = substr($0, c + 1)
			if (field == "types") types = value
			else if (field == "uris") uris = value
			else if (field == "suites") suites = value
			else if (field == "enabled") { enabled = tolower(value); gsub(/[ \t]/, "", enabled) }
			if (found) exit
		}
		END { flush() }
	'
}

ensure_debootstrap() {
	command -v debootstrap >/dev/null 2>&1 && return
	log "installing debootstrap on the host (apt-get update, then install)"
	apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends debootstrap >&2
}

# unmount_all unmounts every mount point below $1, deepest first, so that
# `rm -rf` of a root can never reach into the host's /proc or /dev.
unmount_all() {
	local dir=$1 m
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done < <(awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
}

# logged runs a build step with its output in $BUILD_LOG, shown only when the
# step fails.
logged() {
	if ! "$@" >>"$BUILD_LOG" 2>&1; then
		tail -n 40 "$BUILD_LOG" >&2
		die "build step failed: $* (full log: $BUILD_LOG)"
	fi
}

root_ok() {
	[ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$ROOT_VERSION" ] && [ -x "$ROOT$BIN/postgres" ]
}

# build creates the root in a sibling temporary directory and renames it into
# place only when complete, so an interrupted build never leaves a root that
# looks usable.
build() {
	if root_ok; then
		return
	fi
	need_root
	ensure_debootstrap
	local tmp="${ROOT%/}.build.$$" url started
	started=$(date +%s)
	url=$(mirror)
	BUILD_LOG="${ROOT%/}.build.log"
	mkdir -p "$(dirname "$ROOT")"
	: >"$BUILD_LOG"
	log "building PostgreSQL $PGVER + pgvector root from Debian $SUITE ($url) in $ROOT (once; about a minute)"
	# shellcheck disable=SC2064 # expand $tmp now: the trap runs after build returns
	trap "unmount_all '$tmp'; rm -rf --one-file-system '$tmp'" EXIT
	logged debootstrap --variant=minbase "$SUITE" "$tmp" "$url"

	# No service may start inside the root during package installation, and
	# postgresql-common must not create the default "main" cluster: the data
	# directory is made per `up` by initdb.
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
	chmod 0755 "$tmp/usr/sbin/policy-rc.d"
	mkdir -p "$tmp/etc/postgresql-common"
	echo "create_main_cluster = false" >"$tmp/etc/postgresql-common/createcluster.conf"

	mount -t proc proc "$tmp/proc"
	logged chroot "$tmp" /usr/bin/env DEBIAN_FRONTEND=noninteractive LC_ALL=C \
		apt-get update
	logged chroot "$tmp" /usr/bin/env DEBIAN_FRONTEND=noninteractive LC_ALL=C \
		apt-get install -y --no-install-recommends \
		"postgresql-$PGVER" "postgresql-$PGVER-pgvector"
	logged chroot "$tmp" /usr/bin/env LC_ALL=C apt-get clean
	umount "$tmp/proc"
	rm -f "$BUILD_LOG"

	[ -x "$tmp$BIN/postgres" ] || die "postgres binary missing after install"
	[ -f "$tmp/usr/share/postgresql/$PGVER/extension/vector.control" ] || die "pgvector missing after install"
	echo "$ROOT_VERSION" >"$tmp/.strata-pg-root"

	# Replace an old root (version mismatch) only now that the new one works.
	if [ -e "$ROOT" ]; then
		unmount_all "$ROOT"
		rm -rf --one-file-system "$ROOT"
	fi
	mv "$tmp" "$ROOT"
	trap - EXIT
	log "root built in $(($(date +%s) - started))s: $(chroot "$ROOT" "$BIN/postgres" --version)," \
		"pgvector $(sed -n "s/^default_version = '\(.*\)'/\1/p" "$ROOT/usr/share/postgresql/$PGVER/extension/vector.control")"
}

pidfile_pid() {
	[ -f "$ROOT$DATA/postmaster.pid" ] && head -n1 "$ROOT$DATA/postmaster.pid" 2>/dev/null || true
}

# ours reports whether pid is a postgres postmaster running from our root and
# data directory, so that a stale pid file whose number was reused by another
# process is never mistaken for a live server (and never signalled).
ours() {
	local pid=$1
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
	[ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$(readlink -f "$ROOT")" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$DATA" || return 1
}

ready() {
	[ -x "$ROOT$BIN/pg_isready" ] || return 1
	in_root "$BIN/pg_isready" -q -h /tmp -p "$PORT" -d postgres
}

running() {
	ours "$(pidfile_pid)"
}

# port_taken reports whether something already listens on 127.0.0.1:$PORT.
port_taken() {
	(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null
}

up() {
	need_root
	validate_env
	lock
	build
	if running && ready; then
		log "already running on 127.0.0.1:$PORT (pid $(pidfile_pid))"
		create_db
		echo "STRATA_TEST_PG_DSN=$DSN"
		return
	fi
	if running; then
		# A postmaster of ours that does not answer: stop it before starting
		# afresh rather than leave two servers fighting over one port.
		log "server pid $(pidfile_pid) does not answer; stopping it"
		stop_server
	fi
	if port_taken; then
		die "port $PORT on 127.0.0.1 is in use by another process; set STRATA_PG_PORT"
	fi
	local started
	started=$(date +%s%N)
	# Fresh data directory per up: tests never depend on leftovers, and a
	# stale postmaster.pid from a killed server cannot block the start.
	rm -rf --one-file-system "${ROOT:?}$DATA" "$ROOT$LOG"
	mkdir -p "$ROOT$DATA"
	chroot "$ROOT" chown postgres:postgres "$DATA"
	chmod 0700 "$ROOT$DATA"
	template
	# A copy of the initdb'd template is a fresh cluster in a few
	# milliseconds, where initdb itself takes about a second.
	cp -a "$ROOT$TEMPLATE/." "$ROOT$DATA/"
	# dynamic_shared_memory_type=mmap: POSIX shared memory (/dev/shm) is not
	# mounted in the root. The socket lives in the root's /tmp; TCP only on
	# loopback. max_connections leaves room for several test pools at once.
	cat >>"$ROOT$DATA/postgresql.conf" <<-EOF
		# strata test server (scripts/pg.sh)
		listen_addresses = '127.0.0.1'
		port = $PORT
		unix_socket_directories = '/tmp'
		dynamic_shared_memory_type = mmap
		max_connections = 200
		logging_collector = off
		shared_buffers = ${STRATA_PG_SHARED_BUFFERS:-128MB}
		effective_cache_size = ${STRATA_PG_EFFECTIVE_CACHE_SIZE:-4GB}
	EOF
	chroot "$ROOT" chown postgres:postgres "$DATA/postgresql.conf"
	if ! in_root "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null; then
		tail -n 30 "$ROOT$LOG" >&2 || true
		die "postgres did not start (log: $ROOT$LOG)"
	fi
	local i
	for i in $(seq 1 100); do
		ready && break
		sleep 0.1
	done
	ready || die "postgres started but does not answer (log: $ROOT$LOG)"
	create_db
	log "PostgreSQL $PGVER up on 127.0.0.1:$PORT in $((($(date +%s%N) - started) / 1000000))ms (data $ROOT$DATA, log $ROOT$LOG)"
	echo "STRATA_TEST_PG_DSN=$DSN"
}

# template makes (once per root) a pristine cluster that every `up` copies.
# The sibling .complete file marks a finished initdb, so an interrupted one is
# redone.
template() {
	[ -f "$ROOT$TEMPLATE.complete" ] && return
	rm -rf --one-file-system "${ROOT:?}$TEMPLATE" "$ROOT$TEMPLATE.complete"
	mkdir -p "$ROOT$TEMPLATE"
	chroot "$ROOT" chown postgres:postgres "$TEMPLATE"
	chmod 0700 "$ROOT$TEMPLATE"
	in_root "$BIN/initdb" -D "$TEMPLATE" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null 2>"$ROOT/tmp/strata-initdb.log" || {
		cat "$ROOT/tmp/strata-initdb.log" >&2
		die "initdb failed"
	}
	rm -f "$ROOT/tmp/strata-initdb.log"
	# Create the default test database with pgvector in the template too:
	# CREATE DATABASE checkpoints, which is most of the remaining start time.
	# The server runs on the socket only (no TCP), and is stopped cleanly so
	# that every copy starts without crash recovery.
	in_root "$BIN/pg_ctl" -D "$TEMPLATE" -l /tmp/strata-template.log -w -t 60 \
		-o "-c listen_addresses='' -c unix_socket_directories=/tmp -c port=$PORT -c dynamic_shared_memory_type=mmap" \
		start >/dev/null || {
		cat "$ROOT/tmp/strata-template.log" >&2
		die "template server did not start"
	}
	in_root "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h /tmp -p "$PORT" -U postgres -d postgres \
		-c "CREATE DATABASE strata_test" >/dev/null
	in_root "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h /tmp -p "$PORT" -U postgres -d strata_test \
		-c "CREATE EXTENSION vector" >/dev/null
	in_root "$BIN/pg_ctl" -D "$TEMPLATE" -m fast -w -t 60 stop >/dev/null
	rm -f "$ROOT/tmp/strata-template.log"
	sync -f "$ROOT$TEMPLATE" 2>/dev/null || true
	touch "$ROOT$TEMPLATE.complete"
}

create_db() {
	if [ "$(psql_root postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
		psql_root postgres -qc "CREATE DATABASE $DB" >/dev/null
	fi
	psql_root "$DB" -qc "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
}

psql_root() {
	local db=$1
	shift
	in_root "$BIN/psql" -X -v ON_ERROR_STOP=1 -h /tmp -p "$PORT" -U postgres -d "$db" "$@"
}

stop_server() {
	local pid mode=${1:-fast}
	pid=$(pidfile_pid)
	if ours "$pid"; then
		in_root "$BIN/pg_ctl" -D "$DATA" -m "$mode" -w -t 30 stop >/dev/null 2>&1 || {
			# fast shutdown did not finish in time: immediate shutdown of our
			# own postmaster only (pid checked by ours above).
			log "fast shutdown timed out; immediate shutdown of pid $pid"
			in_root "$BIN/pg_ctl" -D "$DATA" -m immediate -w -t 30 stop >/dev/null 2>&1 || kill -KILL "$pid" 2>/dev/null || true
		}
	fi
}

down() {
	validate_env
	if [ ! -d "$ROOT" ]; then
		log "not running (no root at $ROOT)"
		return
	fi
	need_root
	lock
	if running; then
		stop_server
		log "stopped server on port $PORT"
	else
		log "not running on port $PORT"
	fi
	rm -rf --one-file-system "${ROOT:?}$DATA" "$ROOT/tmp/.s.PGSQL.$PORT" "$ROOT/tmp/.s.PGSQL.$PORT.lock"
}

# stop_keep stops the server and keeps the data directory for `start`.
stop_keep() {
	local mode=${1:-fast}
	case $mode in
	fast | immediate) ;;
	*) die "usage: pg.sh stop [fast|immediate]" ;;
	esac
	need_root
	validate_env
	lock
	if running; then
		stop_server "$mode"
		log "stopped server on port $PORT ($mode); data kept in $ROOT$DATA"
	else
		log "not running on port $PORT"
	fi
}

# start restarts a data directory kept by `stop`; unlike `up` it keeps the
# data, so acknowledged writes must still be there.
start() {
	need_root
	validate_env
	lock
	root_ok || die "no root at $ROOT; run: pg.sh up"
	[ -f "$ROOT$DATA/PG_VERSION" ] || die "no data directory at $ROOT$DATA; run: pg.sh up"
	if running && ready; then
		log "already running on 127.0.0.1:$PORT"
		echo "STRATA_TEST_PG_DSN=$DSN"
		return
	fi
	port_taken && die "port $PORT on 127.0.0.1 is in use by another process"
	if ! in_root "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null; then
		tail -n 30 "$ROOT$LOG" >&2 || true
		die "postgres did not start (log: $ROOT$LOG)"
	fi
	log "restarted PostgreSQL $PGVER on 127.0.0.1:$PORT with kept data"
	echo "STRATA_TEST_PG_DSN=$DSN"
}

status() {
	validate_env
	if [ ! -d "$ROOT" ] || ! root_ok; then
		echo "root: not built ($ROOT)"
		echo "server: down"
		return 3
	fi
	echo "root: $ROOT ($(cat "$MARKER"))"
	if running && ready; then
		echo "server: up on 127.0.0.1:$PORT, pid $(pidfile_pid), data $ROOT$DATA, log $ROOT$LOG"
		echo "STRATA_TEST_PG_DSN=$DSN"
		return 0
	fi
	if running; then
		echo "server: pid $(pidfile_pid) exists but does not answer on port $PORT"
		return 3
	fi
	echo "server: down"
	return 3
}

with() {
	[ $# -gt 0 ] || die "usage: pg.sh with CMD [ARGS...]"
	local line rc=0
	# shellcheck disable=SC2064
	trap "'$0' down || true" EXIT INT TERM
	line=$(up)
	export "${line?}"
	"$@" || rc=$?
	exit "$rc"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
up) up ;;
down) down ;;
stop) stop_keep "$@" ;;
start) start ;;
status) status ;;
env)
	validate_env
	echo "export STRATA_TEST_PG_DSN='$DSN'"
	;;
build)
	need_root
	validate_env
	lock
	build
	log "root ready at $ROOT"
	;;
with) with "$@" ;;
mirror) mirror ;;
psql)
	validate_env
	psql_root "$DB" "$@"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
