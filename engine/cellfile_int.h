#ifndef CELLBOX_CELLFILE_INT_H
#define CELLBOX_CELLFILE_INT_H

/*
 * What the files of cellfile share beyond cellfile.h. Internal: included by the cellfile*.c
 * files only. cellfile_cells.c holds it.
 */

#include <cjson/cJSON.h>

/* A fresh cell id: 8 hex digits, as nbformat makes them (cellfile_cells.c). */
cJSON *cellfile_new_id(void);

#endif
