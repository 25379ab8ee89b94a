/* Returns at once: what bench/boot times. */
int
main(void)
{
	return 0;
}
