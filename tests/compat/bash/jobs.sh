# Background jobs and wait.
for i in 1 2 3; do
	{ echo "job $i"; } >"job$i.txt" &
done
wait
for i in 1 2 3; do read -r l <"job$i.txt"; echo "$l"; done
sleep 0.1 &
pid=$!
wait "$pid"; echo "sleep exited $?"
