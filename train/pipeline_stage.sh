# Sourced by the train/*_pipeline.sh scripts: one resumable, timed stage of a pipeline.
#   stage NAME DONE_MARKER CMD...   skips the stage when DONE_MARKER exists, passes --resume true
#   when RUNS/NAME holds a started run, and appends its wall and CPU seconds to RUNS/times.log.
# Needs RUNS and SEED set by the caller.
stage() {
  local name=$1 done=$2; shift 2
  if [ -e "$done" ]; then echo "skip $name ($done exists)"; return; fi
  local t0; t0=$(date +%s.%N)
  local resume=()
  if [ -e "$RUNS/$name/meta.jsonl" ]; then resume=(--resume true); fi
  /usr/bin/time -f "%U %S" -o "$RUNS/.cpu_$name" "$@" "${resume[@]}"
  local t1; t1=$(date +%s.%N)
  read -r user sys < "$RUNS/.cpu_$name"
  echo "{\"stage\": \"$name\", \"wall_s\": $(echo "$t1 - $t0" | bc), \"cpu_s\": $(echo "$user + $sys" | bc), \"seed\": $SEED}" >> "$RUNS/times.log"
}
