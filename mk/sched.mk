# Schedules: time zones come from the machine's tzdata; the cron oracle
# test compares keep's next fire times with Debian's python3-croniter.
DEPS_PKGS += tzdata python3-croniter
