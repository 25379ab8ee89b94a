/*
 * keepd.yaml: the daemon's configuration, parsed with libyaml into a typed
 * struct. Every key is optional and has a default (config_defaults); an
 * unknown key, a wrong type, a duplicate key or an out-of-range value is an
 * error that names file:line:column. docs/keepd.yaml.5 documents each key.
 *
 * config_parse is pure (no I/O, no globals); config_load reads a file.
 */
#ifndef KEEP_HOST_CONFIG_H
#define KEEP_HOST_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define CONFIG_PATH_MAX 256
#define CONFIG_KEYS_MAX 8 /* issuer or image keys */
#define CONFIG_KEY_MAX 256 /* a PASERK string or a file name */
#define CONFIG_ERRORS_MAX 16 /* further errors are counted, not kept */
#define CONFIG_ERROR_LEN 512
#define CONFIG_FILE_MAX (1024 * 1024)
#define CONFIG_DEFAULT_PATH "/etc/keep/keepd.yaml"
#define CONFIG_NODE_MAX 16 /* [a-z0-9], a sandbox id prefix */
#define CONFIG_DOMAIN_MAX 127 /* ports.domain */

struct keepd_config {
	/* listen: */
	char listen_address[64]; /* an IPv4 or IPv6 literal */
	uint16_t listen_port;
	/* tls: (both or neither) */
	char tls_cert[CONFIG_PATH_MAX];
	char tls_key[CONFIG_PATH_MAX];
	char state_dir[CONFIG_PATH_MAX];
	char policy_dir[CONFIG_PATH_MAX];
	char user[32];
	/* node: this box's name in a fleet, the prefix of its sandbox ids
	 * ("" alone: no prefix). docs/scaling.md */
	char node[CONFIG_NODE_MAX + 1];
	/* ports: domain: the name under which `{port}-{sandbox id}.DOMAIN`
	 * reaches a sandbox's port, as E2B's SDK builds it ("": none).
	 * docs/architecture.md, "Ports". */
	char ports_domain[CONFIG_DOMAIN_MAX + 1];
	/* What runs guests: "auto" (KVM where /dev/kvm opens, else the trap
	 * platform), "kvm" or "trap" (docs/vmm.md). */
	char platform[8];
	/* tokens: */
	char issuer_keys[CONFIG_KEYS_MAX][CONFIG_KEY_MAX];
	size_t nissuer_keys;
	uint64_t token_max_ttl_ms;
	uint64_t token_clock_skew_ms;
	/* images: */
	char image_keys[CONFIG_KEYS_MAX][CONFIG_KEY_MAX];
	size_t nimage_keys;
	/* limits: */
	uint32_t max_connections;
	uint32_t max_sandboxes;
	uint64_t max_request_body;
	uint64_t memory_default;
	uint64_t memory_max;
	uint64_t timeout_default_ms;
	uint64_t timeout_max_ms;
	uint64_t output_max;
	uint64_t workspace_max;
	uint64_t store_reserve; /* disk kept allocated for the store */
	uint32_t max_files; /* a guest's open descriptors (docs/vmm.md) */
	uint32_t max_connections_per_client; /* per source address */
	uint64_t unauthenticated_timeout_ms; /* idle, before a proven request */
	uint64_t max_replies_pending; /* bytes of replies waiting, in all */
	uint64_t
	    process_memory; /* RLIMIT_DATA of each child (vmm: + memory_max) */
	/* restart backoff for crashed children */
	uint64_t restart_backoff_max_ms;
	/* egress: (docs/egress.md) */
	char egress_ca_file[CONFIG_PATH_MAX]; /* "": the system bundle */
	char egress_hosts_file[CONFIG_PATH_MAX]; /* "": DNS only */
	char egress_webhook_key_file[CONFIG_PATH_MAX]; /* "": per start */
	char egress_resolv_conf[CONFIG_PATH_MAX]; /* nameservers, or "" */
	uint32_t egress_dns_port;
	uint64_t egress_timeout_ms;
	uint64_t egress_connect_timeout_ms;
	uint64_t egress_max_request;
	uint64_t egress_max_response;
	uint32_t egress_max_redirects;
	uint32_t egress_max_concurrent;
	uint32_t egress_webhook_attempts;
	uint64_t egress_webhook_backoff_ms;
	/* guest: ca_file: certificates the guests trust beside their
	 * image's (PEM; "": none). docs/vmm.md "Added certificates" */
	char guest_ca_file[CONFIG_PATH_MAX];
	/* The secrets key (docs/secrets.md); "": <state_dir>/keys/secrets.key */
	char secrets_key_file[CONFIG_PATH_MAX];
};

struct config_diag {
	char errors[CONFIG_ERRORS_MAX][CONFIG_ERROR_LEN];
	size_t nerrors; /* may exceed CONFIG_ERRORS_MAX */
};

enum config_err {
	CONFIG_OK = 0,
	CONFIG_ERR_INVALID = 2200, /* see diag */
	CONFIG_ERR_IO /* the file could not be read; see diag */
};

/* Fill cfg with the built-in defaults (the production values). */
void config_defaults(struct keepd_config *cfg);

/*
 * Parse len bytes of YAML named `name` (for diagnostics) over the defaults.
 * Returns CONFIG_OK, or CONFIG_ERR_INVALID with diag filled
 * ("name:line:col: error: ..."); cfg is then unspecified.
 */
int config_parse(const char *name, const char *text, size_t len,
    struct keepd_config *cfg, struct config_diag *diag);

/* Read path (at most CONFIG_FILE_MAX bytes) and config_parse it. */
int config_load(
    const char *path, struct keepd_config *cfg, struct config_diag *diag);

/* A DNS name of labels [a-z0-9-] (not starting or ending with '-'),
 * dot-separated, at most CONFIG_DOMAIN_MAX bytes: 1, else 0. */
int config_valid_domain(const char *s);

#endif
