#ifndef CELLBOX_UTIL_H
#define CELLBOX_UTIL_H

/*
 * The umbrella of the small modules every part uses, as git's git-compat-util.h is: include
 * it for all of them, or just the one a file needs. It declares nothing itself.
 *
 *	alloc.h		xmalloc, xstrdup, xasprintf ...: allocation that aborts on OOM; ARRAY_SIZE
 *	strbuf.h	struct strbuf (a growable buffer with its own cap), struct strlist
 *	utf8.h		utf8_valid, text_check
 *	parse.h		str_trim, kv_parse (`key = value` lines), parse_size, parse_seconds
 *	base64.h	base64_encode
 *	clock.h		now_monotonic, now_wall
 *	fsutil.h	write_all, mkdir_p, remove_tree, replacing a file atomically
 *	process.h	process_alive, signals_for_child
 *	random.h	random_hex: names no one can guess
 */

#include "alloc.h"
#include "strbuf.h"
#include "utf8.h"
#include "parse.h"
#include "base64.h"
#include "clock.h"
#include "fsutil.h"
#include "process.h"
#include "random.h"

#endif
