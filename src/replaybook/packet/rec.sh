# shellcheck shell=bash
# replaybook replay packets: source this file, then prefix commands with `rec`.
#
#   export SESSION_LOG=session.jsonl          # optional; default ./session.jsonl
#   source "$("${REPLAYBOOK_PYTHON:-python3}" -c 'import replaybook.packet as p; print(p.REC_SH)')"
#   rec "pytest -q tests/test_router.py"      # a shell line (like the seed article's rec) ...
#   rec pytest -q tests/test_router.py        # ... or a program and its arguments
#   rec -q --store-output "make test"         # options of `replaybook packet record` come first
#
# Each call runs the command in a child process (so `rec "cd x"` does not move this shell),
# prints its output (stdout and stderr as one stream), appends one line to the session log
# and returns the command's exit code.  The log path is made absolute when this file is
# sourced, so `cd` between commands keeps one log.
#   REPLAYBOOK_PYTHON  interpreter that has replaybook installed (default: python3)
#   REC_STORE_OUTPUT=1 keep normalized outputs beside the log (replay can then show diffs)
#
# Options before the command: -q (no "recorded seq N" line), --store-output, --outputs DIR,
# --log FILE (this call only); `--` ends them.  Any other leading option is refused (exit 2)
# and nothing is recorded: put `--` before a command that starts with `-`.

__rb_log="${SESSION_LOG:-session.jsonl}"
case "$__rb_log" in
  /*) ;;
  *) __rb_log="$PWD/$__rb_log" ;;
esac
REPLAYBOOK_REC_LOG="$__rb_log"
unset __rb_log

rec() {
  # options of `replaybook packet record`, before the command; `--` ends them
  local __rb_quiet="" __rb_store="${REC_STORE_OUTPUT:-}" __rb_outputs="" __rb_logfile="$REPLAYBOOK_REC_LOG"
  while [ "$#" -gt 0 ]; do
    case "$1" in
      -q|--quiet) __rb_quiet=1; shift ;;
      --store-output) __rb_store=1; shift ;;
      --outputs|--log)
        if [ "$#" -lt 2 ]; then
          echo "rec: $1 needs a value (rec $1 PATH CMD ...); nothing was recorded" >&2
          return 2
        fi
        if [ "$1" = "--log" ]; then __rb_logfile="$2"; else __rb_outputs="$2"; fi
        shift 2 ;;
      --outputs=*) __rb_outputs="${1#--outputs=}"; shift ;;
      --log=*) __rb_logfile="${1#--log=}"; shift ;;
      --) shift; break ;;
      -?*)
        echo "rec: unknown option '$1'; nothing was recorded. rec takes -q, --store-output, --outputs DIR and" \
             "--log FILE before the command; put -- before a command that starts with '-' (rec -- $1 ...)" >&2
        return 2 ;;
      *) break ;;
    esac
  done
  if [ "$#" -eq 0 ]; then
    echo "usage: rec [-q] [--store-output] [--outputs DIR] [--log FILE] [--] CMD [ARGS...]   or   rec [options] \"shell line\"" >&2
    return 2
  fi
  "${REPLAYBOOK_PYTHON:-python3}" -m replaybook.packet.cli record --log "$__rb_logfile" ${__rb_quiet:+-q} \
    ${__rb_store:+--store-output} ${__rb_outputs:+--outputs} ${__rb_outputs:+"$__rb_outputs"} -- "$@"
}
