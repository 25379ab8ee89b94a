/*
 * The python stock image's entry point: CPython 3.11 linked statically
 * from Debian's libpython3.11.a. Isolated (no environment variables, no
 * user site, no site.py) and with the standard library from one zip that
 * the image ships, so nothing is looked up on the host side of the VM.
 * Otherwise the ordinary command line: -c CODE, a script, or stdin.
 */
#include <Python.h>

#include <limits.h>
#include <unistd.h>

#define STDLIB_ZIP L"/lib/python311.zip"

/*
 * sys.executable from the kernel's name for this program, which is
 * /bin/python in the guest: the image's command is run as "python" with
 * no $PATH, and CPython would otherwise leave sys.executable empty, so
 * nothing could run the interpreter again (subprocess, multiprocessing).
 * 0, or -1 with nothing set (CPython then guesses as before).
 */
static int
set_executable(PyConfig *config, PyStatus *st)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (n <= 0 || path[0] != '/')
		return -1;
	path[n] = '\0';
	*st = PyConfig_SetBytesString(config, &config->executable, path);
	return 0;
}

int
main(int argc, char **argv)
{
	PyConfig config;
	PyStatus st;

	PyConfig_InitIsolatedConfig(&config);
	config.parse_argv = 1; /* isolated configs default to 0 */
	config.site_import = 0;
	config.write_bytecode = 0;
	config.user_site_directory = 0;
	/* As python3 natively: SIGINT raises KeyboardInterrupt, SIGPIPE and
	 * SIGXFSZ are ignored (a write to a closed pipe is BrokenPipeError,
	 * not the end of the process). Isolated configs default to 0. */
	config.install_signal_handlers = 1;
	config.module_search_paths_set = 1;
	st = PyWideStringList_Append(&config.module_search_paths, STDLIB_ZIP);
	if (PyStatus_Exception(st))
		goto fail;
	st = PyConfig_SetString(&config, &config.home, L"/");
	if (PyStatus_Exception(st))
		goto fail;
	st = PyConfig_SetBytesArgv(&config, argc, argv);
	if (PyStatus_Exception(st))
		goto fail;
	if (set_executable(&config, &st) == 0 && PyStatus_Exception(st))
		goto fail;
	st = Py_InitializeFromConfig(&config);
	if (PyStatus_Exception(st))
		goto fail;
	PyConfig_Clear(&config);
	return Py_RunMain();
fail:
	PyConfig_Clear(&config);
	Py_ExitStatusException(st);
}
