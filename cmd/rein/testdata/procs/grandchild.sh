# An exec tool that leaves a grandchild of rein behind, as a script that
# starts a helper does: a subshell, in the tool's process group, that
# waits for a file named release and then writes effect (the effect that
# must never happen once rein was killed). It gives up after 60 s, so a
# failed test leaves nothing running for long. The tool itself writes the
# pids and waits for the subshell.
(
  i=0
  while [ ! -e release ] && [ "$i" -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  if [ -e release ]; then echo done > effect; fi
) &
echo $! > grandchild.tmp && mv grandchild.tmp grandchild.pid
echo $$ > leader.tmp && mv leader.tmp leader.pid
wait
echo '{}'
