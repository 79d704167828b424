#ifndef CELLBOX_UTIL_H
#define CELLBOX_UTIL_H

/*
 * The umbrella of the small modules every part uses, as git's git-compat-util.h is: include
 * it for all of them, or just the one a file needs. It declares nothing itself.
 *
 *	alloc.h		xmalloc, xstrdup, xasprintf ...: allocation that aborts on OOM; ARRAY_SIZE
 *	strbuf.h	struct strbuf (a growable buffer with its own cap)
 *	strlist.h	struct strlist (a growable list of strings)
 *	utf8.h		utf8_valid, utf8_check_text
 *	parse.h		parse_trim, parse_kv (`key = value` lines), parse_size, parse_seconds
 *	base64.h	base64_encode
 *	clock.h		clock_now, clock_wall
 *	fsutil.h	fsutil_write_all, fsutil_mkdir_p, fsutil_remove_tree, replacing a file atomically
 *	process.h	process_alive, process_signals_for_child
 *	random.h	random_hex: names no one can guess
 */

#include "alloc.h"
#include "strbuf.h"
#include "strlist.h"
#include "utf8.h"
#include "parse.h"
#include "base64.h"
#include "clock.h"
#include "fsutil.h"
#include "process.h"
#include "random.h"

#endif
