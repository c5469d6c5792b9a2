# Shared by the bench scripts that time whole commands (source it after setting WORK, a scratch
# folder): `measure CMD…` prints one run's wall seconds (nanosecond clock) and peak RSS in KiB
# (GNU time); `median` prints the median of the numbers on stdin.
measure() {
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f "%M" "$@" >/dev/null 2>"$WORK/time" || true
  end=$(date +%s.%N)
  echo "$(echo "$end - $start" | bc -l) $(tail -1 "$WORK/time")"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
