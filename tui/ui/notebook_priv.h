#ifndef CELLBOX_NOTEBOOK_PRIV_H
#define CELLBOX_NOTEBOOK_PRIV_H

/* What notebook.c calls in notebook_save.c beyond notebook.h (not for other modules). */

#include "notebook.h"

/* The format a file name asks for (.ipynb, else percent). */
enum nb_format notebook_format_of(const char *path);
/* Remember the file's identity (device, inode, size, mtime) as it is now. */
void notebook_note_stat(struct notebook *nb);

#endif
