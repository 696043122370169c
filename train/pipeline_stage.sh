# Sourced by the train/*.sh pipelines: resumable, timed stages. Needs RUNS and SEED set by the caller.
#   stage NAME DONE_MARKER CMD...   skips the stage when DONE_MARKER exists, passes --resume true when
#                                   RUNS/NAME holds a started run.
#   chunk NAME DONE_TEST RESUME CMD...   one chunk of a long stage: skipped when the shell test DONE_TEST
#                                   holds, given the flags RESUME once a chunk has begun; a command that
#                                   stops early exits 3 ("run the same command again"), and so does the
#                                   pipeline until DONE_TEST holds.
# Both append the wall and CPU seconds of what they ran to RUNS/times.log.
timed() {  # NAME EXTRA_JSON CMD...: runs CMD, logs its seconds, returns its status
  local name=$1 extra=$2; shift 2
  local t0 status=0 user sys
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$RUNS/.cpu_$name" "$@" || status=$?
  read -r user sys < <(tail -n 1 "$RUNS/.cpu_$name")
  printf '{"stage": "%s",%s "wall_s": %.2f, "cpu_s": %.2f, "seed": %s}\n' "$name" "$extra" \
    "$(echo "$(date +%s.%N) - $t0" | bc)" "$(echo "$user + $sys" | bc)" "$SEED" >> "$RUNS/times.log"
  return "$status"
}
stage() {
  local name=$1 done=$2; shift 2
  if [ -e "$done" ]; then echo "skip $name ($done exists)"; return; fi
  local resume=()
  if [ -e "$RUNS/$name/meta.jsonl" ]; then resume=(--resume true); fi
  timed "$name" "" "$@" "${resume[@]}"
}
chunk() {
  local name=$1 done_test=$2 resume=() status=0; shift 2
  read -ra resume <<< "$1"; shift
  if eval "$done_test"; then echo "skip $name (done)"; return; fi
  if [ -e "$RUNS/.begun_$name" ]; then set -- "$@" "${resume[@]}"; else touch "$RUNS/.begun_$name"; fi
  timed "$name" ' "chunk": true,' "$@" || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then exit "$status"; fi
  if ! eval "$done_test"; then echo "$name: this chunk is over; run the same command again to go on"; exit 3; fi
}
