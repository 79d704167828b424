#ifndef CELLBOX_MAN_H
#define CELLBOX_MAN_H

/*
 * The manual page, cellbox.1, as roff on `f`, made from the tables --help is made from (the
 * commands, the settings, the exit codes, the full-screen UI's keys and commands). The build
 * runs `cellbox --man` and installs it.
 */

#include <stdio.h>
#include "cli.h"

void man_write(const struct cli_command *const *cmds, size_t n, FILE *f);

#endif
