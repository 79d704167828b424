#include "random.h"

#include <errno.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"

/* Fill `hex` with `n` random bytes as hex digits. */
void random_hex(char *hex, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char buf[64];
	size_t got = 0;

	if (n > sizeof(buf))
		n = sizeof(buf);
	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			/* No getrandom: the names must still differ; the clock and pid will do. */
			unsigned long long x = (unsigned long long)(clock_wall() * 1e9) ^
					       ((unsigned long long)getpid() << 32);
			for (; got < n; got++, x = x * 6364136223846793005ull + 1442695040888963407ull)
				buf[got] = (unsigned char)(x >> 56);
			break;
		}
		got += (size_t)r;
	}
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[buf[i] >> 4];
		hex[2 * i + 1] = digits[buf[i] & 15];
	}
	hex[2 * n] = '\0';
}
