#include <string.h>

#include "lib/caps.h"
#include "lib/util.h"

static const struct {
	const char *name;
	int write;
} caps[CAP_COUNT] = {
	[CAP_AGENT_READ] = { "agent:read", 0 },
	[CAP_AGENT_WRITE] = { "agent:write", 1 },
	[CAP_ARTIFACT_READ] = { "artifact:read", 0 },
	[CAP_ARTIFACT_WRITE] = { "artifact:write", 1 },
	[CAP_AGENT_RUN_READ] = { "agent-run:read", 0 },
	[CAP_AGENT_RUN_WRITE] = { "agent-run:write", 1 },
	[CAP_SCHEDULE_READ] = { "schedule:read", 0 },
	[CAP_SCHEDULE_WRITE] = { "schedule:write", 1 },
	[CAP_SANDBOX_READ] = { "sandbox:read", 0 },
	[CAP_SANDBOX_WRITE] = { "sandbox:write", 1 },
	[CAP_IMAGE_READ] = { "image:read", 0 },
	[CAP_IMAGE_WRITE] = { "image:write", 1 },
	[CAP_AUDIT_READ] = { "audit:read", 0 },
	[CAP_POLICY_READ] = { "policy:read", 0 },
	[CAP_EXEC] = { "exec", 1 },
	[CAP_EGRESS] = { "egress", 1 },
	[CAP_SECRET_READ] = { "secret:read", 0 },
	[CAP_ADMIN] = { "admin", 1 },
	[CAP_SECRET_WRITE] = { "secret:write", 1 },
};

const char *
cap_name(enum cap_id id)
{
	if ((unsigned)id >= CAP_COUNT)
		return NULL;
	return caps[id].name;
}

int
cap_lookup(const char *name, size_t len)
{
	for (size_t i = 0; i < nitems(caps); i++)
		if (strlen(caps[i].name) == len &&
		    memcmp(caps[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

int
cap_is_write(enum cap_id id)
{
	if ((unsigned)id >= CAP_COUNT)
		return 1;
	return caps[id].write;
}
