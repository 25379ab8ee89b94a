/* The library dlopen.c opens. */
int keep_square(int x);

int
keep_square(int x)
{
	return x * x;
}
