# shellcheck shell=bash
# replaybook replay packets: source this file, then prefix commands with `rec`.
#
#   export SESSION_LOG=session.jsonl          # optional; default ./session.jsonl
#   source "$("${REPLAYBOOK_PYTHON:-python3}" -c 'import replaybook.packet as p; print(p.REC_SH)')"
#   rec "pytest -q tests/test_router.py"      # a shell line (like the seed article's rec) ...
#   rec pytest -q tests/test_router.py        # ... or a program and its arguments
#
# Each call runs the command in a child process (so `rec "cd x"` does not move this shell),
# prints its output (stdout and stderr as one stream), appends one line to the session log
# and returns the command's exit code.  The log path is made absolute when this file is
# sourced, so `cd` between commands keeps one log.
#   REPLAYBOOK_PYTHON  interpreter that has replaybook installed (default: python3)
#   REC_STORE_OUTPUT=1 keep normalized outputs beside the log (replay can then show diffs)

__rb_log="${SESSION_LOG:-session.jsonl}"
case "$__rb_log" in
  /*) ;;
  *) __rb_log="$PWD/$__rb_log" ;;
esac
REPLAYBOOK_REC_LOG="$__rb_log"
unset __rb_log

rec() {
  if [ "$#" -eq 0 ]; then
    echo "usage: rec CMD [ARGS...]   or   rec \"shell line\"" >&2
    return 2
  fi
  if [ -n "${REC_STORE_OUTPUT:-}" ]; then
    "${REPLAYBOOK_PYTHON:-python3}" -m replaybook.packet.cli record --log "$REPLAYBOOK_REC_LOG" --store-output -- "$@"
  else
    "${REPLAYBOOK_PYTHON:-python3}" -m replaybook.packet.cli record --log "$REPLAYBOOK_REC_LOG" -- "$@"
  fi
}
