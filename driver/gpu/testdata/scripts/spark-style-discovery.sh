#!/bin/sh
# A discovery script speaking Spark's protocol, written for xres's tests
# after Spark's documentation: it takes no arguments and prints one JSON
# object in the format of Spark's ResourceInformation, listing every GPU of
# the host; Spark's scheduler (here xres's coordination) chooses among them.
#
# XRES_FAKE_GPUS   how many GPUs the host has (default 4)
# XRES_ARGS_FILE   when set, the arguments the script got are written there
# XRES_SPARK_NAME  the resource name printed (default gpu)
if [ -n "$XRES_ARGS_FILE" ]; then
  echo "$#:$*" > "$XRES_ARGS_FILE"
fi
n=${XRES_FAKE_GPUS:-4}
addrs=""
i=0
while [ "$i" -lt "$n" ]; do
  addrs="$addrs${addrs:+,}\"$i\""
  i=$((i + 1))
done
printf '{"name": "%s", "addresses": [%s]}\n' "${XRES_SPARK_NAME:-gpu}" "$addrs"
