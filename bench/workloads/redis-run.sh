#!/bin/sh
# SPDX-License-Identifier: MIT
# redis-run.sh SERVER PORT REQUESTS: the server-shaped workload of
# run-bench.py.  MIT licence.
#
# Started by hpb-run with the contender's environment (LD_PRELOAD,
# GLIBC_TUNABLES, MALLOC_CONF, ...), this script becomes redis-server
# (exec, so hpb-run measures the server's time, CPU and memory), after
# starting a detached client without that environment: it waits for the
# server, runs redis-benchmark over loopback (REQUESTS requests of each of
# SET, GET, INCR, LPUSH, LPOP, SADD, HSET, ZADD and LRANGE_100, random keys
# over a keyspace of a million, 200-byte values, 16 commands pipelined),
# then shuts the server down.  A failed client kills the server, so the run
# is reported as failed.  SERVER is a redis-server executable (Debian's is
# a link to redis-check-rdb, and redis picks its mode by that name).
set -eu
server=$1 port=$2 n=$3
pid=$$
(
  (
    unset LD_PRELOAD GLIBC_TUNABLES MALLOC_CONF MIMALLOC_LARGE_OS_PAGES PYTHONMALLOC
    up=0
    for _ in $(seq 200); do
      if redis-cli -p "$port" ping >/dev/null 2>&1; then up=1; break; fi
      sleep 0.05
    done
    if [ "$up" = 1 ] &&
       timeout 900 redis-benchmark -p "$port" -n "$n" -r 1000000 -d 200 -P 16 \
         -t set,get,incr,lpush,lpop,sadd,hset,zadd,lrange_100 --csv -q; then
      redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
      for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done
      echo "redis-run: the server did not shut down" >&2
      kill -KILL "$pid"
    else
      echo "redis-run: the client failed (server up: $up)" >&2
      kill -KILL "$pid"
    fi
  ) &
) </dev/null
exec "$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
  --disable-thp no --daemonize no --logfile "" --loglevel warning
