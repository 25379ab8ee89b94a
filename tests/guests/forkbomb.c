/* A fork bomb: every process forks for ever. The run's process limit
 * must stop it (EAGAIN), and the run's time limit end it. */
#include <unistd.h>

int
main(void)
{
	for (;;)
		fork();
}
