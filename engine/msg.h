#ifndef CELLBOX_MSG_H
#define CELLBOX_MSG_H

/*
 * Messages for the user on stderr, the one way every part says what went wrong:
 * "cellbox: " and the message, lowercase, naming the thing ("cannot open 'a.py': No such
 * file or directory"). The engine's own functions return their errors in a strbuf instead.
 */

/*
 * Print "cellbox: " + message + newline to stderr, through the sanitiser (sanitize.h): a
 * message may quote a file's name, a cell's line, the kernel's words.
 */
void msg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
