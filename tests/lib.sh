# Shared by the shell tests (sourced, not run).

# wait_log FILE TEXT SECONDS: waits until FILE has a line matching TEXT (a
# grep pattern), at most SECONDS; status 1 if it never does.
wait_log() {
  for _ in $(seq $(($3 * 10))); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
