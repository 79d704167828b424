/* cellbox's entry point: the command line (tui/cli/) takes it from here. */
#include "cli.h"

int main(int argc, char **argv)
{
	return cli_main(argc, argv);
}
