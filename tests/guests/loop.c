/* Never returns: the timeout must stop it. */
int
main(void)
{
	for (volatile unsigned long i = 0;; i++)
		;
}
