# cellbox runner for R: serves one persistent R session through a channel directory.
#
#   Rscript runner.R CHANNEL_DIR
#
# The host (cellbox) writes requests as CHANNEL_DIR/host/commands/<id>.json (the host's part of
# the channel: read-only here) and reads the events of each request from
# CHANNEL_DIR/kernel/results/<id>.jsonl (the kernel's part). kernels/PROTOCOL.md (in the cellbox
# sources) is the contract, the same for every kernel; this file is embedded into the cellbox
# executable and needs only base R and the jsonlite package (ggplot2, lattice: user code).
# It is written in parts, kernels/r/runner/NN-name.R, joined by the build in the order of
# their names (scripts/embed.py --join) into the one script that runs.
#
# How it works, with no threads in R:
# - The kernel (this process) evaluates cells in the global environment one top-level
#   expression at a time and shows visible values as the console prints them.
# - File descriptors 1 and 2 are pipes. A forked *reader* turns what arrives on fd 1 into stdout
#   events while the cell runs and is the one writer of results/<id>.jsonl; a forked *relay*
#   passes what arrives on fd 2 to the reader as framed stderr. The kernel's own events travel
#   on fd 1 too, as frames between the text (a random marker, a type, a length), so they keep
#   their order with the output. Before `done` the kernel waits until the relay has passed on
#   all stderr written so far.
# - The kernel waits for commands in a blocking read of what the host writes a byte to after
#   each command (no polling): its stdin in a container (CELLBOX_WAKE=stdin), else the host's
#   host/wake FIFO; without either, it scans commands/ every POLL seconds.
# - host/ is read-only here: command files and input answers are never removed (the host does
#   that once a request is done), so the runner remembers the names it served.
# - SIGINT is R's interrupt; it is let in only while user code runs, and one that arrived
#   between requests is dropped.

# R parses a script given by --file one expression at a time, again from the start of an
# unfinished one at every line: one expression of this size takes seconds. So the first
# expression parses the rest of this file at once and runs it in an environment of its own
# (not the user's global one); the main loop never returns, so nothing is read after it.
local({
  me <- sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE)[1L])
  eval(parse(me, keep.source = FALSE)[-1L], new.env(parent = baseenv()))
})

PROTOCOL <- 2L
CHUNK <- 65536L          # max characters of text in one stream event
FRAME <- 4000L           # max payload of one frame: a pipe write of PIPE_BUF or less is atomic
POLL <- 0.01             # command scan interval without a wake-up
NO_STDIN_MSG <- paste("readline() was called but this session cannot answer input requests",
                      "(one-shot or batch run)")
PLOT_TEXT <- "plot without title"
# IRkernel's (and repr's) defaults: a plot of 7 x 7 inches at 120 dpi, shown at half its
# pixel size (jupyter.plot_scale); the mime types a value is offered in besides text/plain
# (IRdisplay's jupyter.display_mimetypes), each by the repr package's repr_*() when it has one.
PLOT_DEFAULTS <- c(width = 7, height = 7, res = 120, scale = 2)
DISPLAY_MIMES <- c("text/plain", "text/html", "text/markdown", "text/latex", "application/json",
                   "application/javascript", "application/geo+json", "application/vdom.v1+json",
                   "application/vnd.plotly.v1+json", "application/vnd.vegalite.v2+json",
                   "application/vnd.vega.v4+json", "application/pdf", "image/png",
                   "image/jpeg", "image/svg+xml")

S <- new.env()           # the runner's state
S$count <- 0L            # execution count
S$plot_n <- 0L
S$dev_seq <- 0L
S$devs <- integer(0)     # graphics devices this runner opened (numbers), in order
S$req_id <- NULL
S$allow_stdin <- FALSE
S$helpers <- integer(0)
S$opened <- FALSE        # a device of ours was opened in this cell
S$titles <- list()       # by device: the title of its page being drawn, as last seen
S$repr <- NULL           # the repr package loaded (TRUE/FALSE), once a value is shown
S$frame <- 0L            # the frame of run_expr(), under the cell's eval()
S$unacked <- FALSE       # a done is on its way through the relay

# ------------------------------------------------------------------------------------------
# small things

# One JSON string literal, in base R (the helpers fork before any package is loaded).
esc1 <- function(s) {
  s <- gsub("\\", "\\\\", s, fixed = TRUE)
  s <- gsub("\"", "\\\"", s, fixed = TRUE)
  cp <- utf8ToInt(s)
  for (c in unique(cp[!is.na(cp) & cp < 32L]))
    s <- gsub(intToUtf8(c), switch(as.character(c), `10` = "\\n", `9` = "\\t",
                                   `13` = "\\r", sprintf("\\u%04x", c)), s, fixed = TRUE)
  paste0("\"", s, "\"")
}

# JSON string literals of a character vector: jsonlite's C escaper once the kernel loaded it.
esc <- function(x) {
  x <- enc2utf8(x)
  if (!is.null(S$fast_esc)) .Call(S$fast_esc, x) else vapply(x, esc1, "", USE.NAMES = FALSE)
}

# JSON text of a value: named lists are objects, unnamed lists arrays, length-1 atoms scalars.
json <- function(x) {
  if (is.null(x)) return("null")
  if (is.list(x)) {
    nm <- names(x)
    if (is.null(nm)) return(paste0("[", paste(vapply(x, json, ""), collapse = ","), "]"))
    if (!length(x)) return("{}")
    return(paste0("{", paste0(esc(nm), ":", vapply(x, json, ""), collapse = ","), "}"))
  }
  if (length(x) != 1L) return(json(as.list(x)))
  if (is.na(x)) return("null")
  if (is.character(x)) return(esc(x))
  if (is.logical(x)) return(if (x) "true" else "false")
  if (is.numeric(x)) return(if (is.finite(x)) format(x, digits = 15, scientific = FALSE) else "null")
  esc(as.character(x))
}
empty_object <- function() structure(list(), names = character(0))

now <- function() as.numeric(Sys.time())

log_msg <- function(...) {
  msg <- paste0(...)
  tryCatch({
    cat("cellbox runner: ", msg, if (!endsWith(msg, "\n")) "\n", file = S$log, sep = "")
    flush(S$log)
  }, error = function(e) NULL)
}

# Bytes -> UTF-8 text; invalid bytes (and NUL) become U+FFFD.
decode <- function(b) {
  if (!length(b)) return("")
  b[b == as.raw(0L)] <- as.raw(0xffL)
  s <- rawToChar(b)
  Encoding(s) <- "UTF-8"
  if (!validUTF8(s)) {
    Encoding(s) <- "bytes"
    s <- iconv(s, "UTF-8", "UTF-8", sub = "\uFFFD")
    Encoding(s) <- "UTF-8"
  }
  s
}

# How many bytes at the end of b are the start of a UTF-8 character not yet complete.
utf8_tail <- function(b) {
  n <- length(b)
  for (k in seq_len(min(3L, n))) {
    v <- as.integer(b[n - k + 1L])
    if (v < 0x80L) return(0L)
    if (v >= 0xC0L) {
      need <- if (v >= 0xF0L) 4L else if (v >= 0xE0L) 3L else 2L
      return(if (k < need) k else 0L)
    }
  }
  0L
}

# How many bytes at the end of b could be the start of a frame marker.
mark_tail <- function(b, mark) {
  n <- length(b)
  if (!n) return(0L)
  for (p in max(1L, n - length(mark) + 2L):n)
    if (b[p] == mark[1L] && all(b[p:n] == mark[seq_len(n - p + 1L)])) return(n - p + 1L)
  0L
}

frame <- function(type, payload)
  c(S$mark, charToRaw(type), charToRaw(sprintf("%08x", length(payload))), payload)

