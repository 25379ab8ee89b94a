# Pipelines and external commands.
printf 'pear\napple\nfig\n' | sort | head -n 2
echo "status of the pipeline: ${PIPESTATUS[*]}"
printf 'x y z\n' | tr ' ' '\n' | wc -l
