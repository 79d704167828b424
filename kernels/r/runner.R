# cellbox runner for R: serves one persistent R session through a channel directory.
#
#   Rscript runner.R CHANNEL_DIR
#
# The host (cellbox) writes requests as CHANNEL_DIR/host/commands/<id>.json (the host's part of
# the channel: read-only here) and reads the events of each request from
# CHANNEL_DIR/kernel/results/<id>.jsonl (the kernel's part). kernels/PROTOCOL.md (in the cellbox
# sources) is the contract, the same for every kernel; this file is embedded into the cellbox
# executable and needs only base R and the jsonlite package (ggplot2, lattice: user code).
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

# ------------------------------------------------------------------------------------------
# the reader (a forked process): fd 1's text and the kernel's frames -> results/<id>.jsonl

reader <- function(input) {
  mark <- S$mark
  ml <- length(mark)
  buf <- raw(0)
  cont <- raw(0)
  tails <- list(stdout = raw(0), stderr = raw(0))
  out <- NULL

  put <- function(bytes) {
    if (is.null(out)) {
      cat(rawToChar(bytes[bytes != as.raw(0L)]), file = S$log)
      flush(S$log)
      return()
    }
    writeBin(bytes, out)
    flush(out)
  }
  text <- function(name, bytes, final = FALSE) {
    b <- c(tails[[name]], bytes)
    keep <- if (final) 0L else utf8_tail(b)
    tails[[name]] <<- b[seq_len(keep) + (length(b) - keep)]
    s <- decode(b[seq_len(length(b) - keep)])
    n <- nchar(s)
    if (!n) return()
    head <- paste0('{"type":"stream","name":"', name, '","text":')
    starts <- seq(1L, n, by = CHUNK)
    parts <- if (length(starts) == 1L) s else substring(s, starts, pmin(starts + CHUNK - 1L, n))
    put(charToRaw(paste0(head, esc(parts), "}\n", collapse = "")))
  }
  line <- function(payload) {
    put(c(cont, payload, as.raw(10L)))
    cont <<- raw(0)
  }
  handle <- function(type, payload) {
    switch(type,
      B = {
        if (!is.null(out)) close(out)
        path <- file.path(S$res_dir, paste0(rawToChar(payload), ".jsonl"))
        out <<- tryCatch(file(path, "ab"), error = function(e) {
          log_msg("cannot open ", path, ": ", conditionMessage(e))
          NULL
        })
      },
      C = cont <<- c(cont, payload),
      E = line(payload),
      D = {
        text("stdout", raw(0), TRUE)
        text("stderr", raw(0), TRUE)
        line(payload)
        if (!is.null(out)) close(out)
        out <<- NULL
      },
      S = text("stderr", payload),
      log_msg("reader: unknown frame type ", type))
  }
  since_gc <- 0
  repeat {
    chunk <- readBin(input, "raw", 65536L)
    if (!length(chunk)) break                   # every writer is gone: the kernel ended
    # collect the buffers of bulk output early: R's heap (and RSS) stays small
    since_gc <- since_gc + length(chunk)
    if (since_gc > 1e6) {
      gc(full = FALSE)
      since_gc <- 0
    }
    buf <- if (length(buf)) c(buf, chunk) else chunk
    n <- length(buf)
    pos <- 1L                                   # parse in place: no copy per frame
    repeat {
      at <- grepRaw(mark, buf, offset = pos, fixed = TRUE)
      if (!length(at)) {
        keep <- min(mark_tail(buf, mark), n - pos + 1L)
        if (n - keep >= pos) text("stdout", buf[pos:(n - keep)])
        pos <- n - keep + 1L
        break
      }
      if (at > pos) text("stdout", buf[pos:(at - 1L)])
      pos <- at
      if (n - at + 1L < ml + 9L) break
      len <- strtoi(rawToChar(buf[(at + ml + 1L):(at + ml + 8L)]), 16L)
      if (is.na(len) || len < 0L) {             # not a frame after all: it is text
        text("stdout", buf[at:(at + ml - 1L)])
        pos <- at + ml
        next
      }
      if (n - at + 1L < ml + 9L + len) break
      type <- rawToChar(buf[at + ml])
      payload <- if (len) buf[(at + ml + 9L):(at + ml + 8L + len)] else raw(0)
      pos <- at + ml + 9L + len
      handle(type, payload)
    }
    buf <- if (pos <= n) buf[pos:n] else raw(0)
  }
}

# The relay (a forked process): fd 2's text -> stderr frames on fd 1. A frame the kernel
# wrote to fd 2 (its done event) goes on to fd 1 after the text before it, then the relay
# acknowledges it.
relay <- function(input, output, ack) {
  mark <- S$mark
  ml <- length(mark)
  buf <- raw(0)
  send <- function(b) {
    n <- length(b)
    for (i in seq(1L, n, by = FRAME))
      writeBin(frame("S", b[i:min(n, i + FRAME - 1L)]), output)
  }
  repeat {
    chunk <- readBin(input, "raw", 65536L)
    if (!length(chunk)) break
    buf <- if (length(buf)) c(buf, chunk) else chunk
    n <- length(buf)
    pos <- 1L
    repeat {
      at <- grepRaw(mark, buf, offset = pos, fixed = TRUE)
      if (!length(at)) {
        keep <- min(mark_tail(buf, mark), n - pos + 1L)
        if (n - keep >= pos) send(buf[pos:(n - keep)])
        pos <- n - keep + 1L
        break
      }
      if (at > pos) send(buf[pos:(at - 1L)])
      pos <- at
      if (n - at + 1L < ml + 9L) break
      len <- strtoi(rawToChar(buf[(at + ml + 1L):(at + ml + 8L)]), 16L)
      if (is.na(len) || len < 0L) {             # not a frame: text
        send(buf[at:(at + ml - 1L)])
        pos <- at + ml
        next
      }
      if (n - at + 1L < ml + 9L + len) break
      writeBin(buf[at:(at + ml + 8L + len)], output)
      pos <- at + ml + 9L + len
      writeBin(as.raw(1L), ack)
    }
    buf <- if (pos <= n) buf[pos:n] else raw(0)
  }
}

# Fork a helper that runs fun() with its output going to the log, then exits. Interrupts stay
# out: the host's SIGINT goes to the kernel's whole process group.
fork_helper <- function(fun) {
  p <- parallel:::mcfork(estranged = TRUE)
  if (inherits(p, "masterProcess")) {
    tryCatch(suspendInterrupts({
      sink(S$log)
      sink(S$log, type = "message")
      fun()
    }), error = function(e) log_msg("helper failed: ", conditionMessage(e)))
    parallel:::mcexit(0L)
  }
  p$pid
}

# fds 1 and 2 become pipes read by the helpers; the kernel keeps a connection on each.
setup_capture <- function() {
  parallel:::closeStdout(FALSE)
  S$X <- fifo("", "w+b", blocking = TRUE)      # the lowest free descriptor: 1
  parallel:::closeStderr(FALSE)
  S$Y <- fifo("", "w+b", blocking = TRUE)      # 2
  S$Z <- fifo("", "w+b", blocking = TRUE)      # acks of the relay
  for (fd in 1:2) {
    link <- Sys.readlink(sprintf("/proc/self/fd/%d", fd))
    if (!nzchar(link) || !grepl("Rf", basename(link)))
      stop(sprintf("fd %d is not the capture pipe (%s)", fd, link))
  }
  S$helpers <- c(S$helpers, fork_helper(function() {
    input <- fifo("/proc/self/fd/1", "rb", blocking = TRUE)
    parallel:::closeStdout(TRUE)               # no write end of our own: EOF when all are gone
    parallel:::closeStderr(TRUE)
    # jsonlite's C escaper without its namespace (which would load methods: 20 MB)
    S$fast_esc <- tryCatch({
      dll <- dyn.load(file.path(system.file(package = "jsonlite"), "libs",
                                paste0("jsonlite", .Platform$dynlib.ext)))
      getNativeSymbolInfo("C_escape_chars", dll)
    }, error = function(e) NULL)
    reader(input)
  }))
  S$helpers <- c(S$helpers, fork_helper(function() {
    input <- fifo("/proc/self/fd/2", "rb", blocking = TRUE)
    output <- fifo("/proc/self/fd/1", "wb", blocking = TRUE)
    parallel:::closeStdout(TRUE)
    parallel:::closeStderr(TRUE)
    relay(input, output, S$Z)
  }))
  sink(S$X)
}

# ------------------------------------------------------------------------------------------
# events (the kernel's side)

# Write one event line (JSON text) as frames: C for a part, then E (or D for done).
send_line <- function(line, last = "E") {
  b <- charToRaw(enc2utf8(line))
  n <- length(b)
  suspendInterrupts({
    if (n <= FRAME) {
      writeBin(frame(last, b), S$X)
    } else {
      starts <- seq(1L, n, by = FRAME)
      for (i in starts) {
        j <- min(n, i + FRAME - 1L)
        writeBin(frame(if (j < n) "C" else last, b[i:j]), S$X)
      }
    }
  })
  invisible()
}

emit <- function(ev) send_line(json(ev))

emit_stderr <- function(text) {
  if (nzchar(text)) send_line(paste0('{"type":"stream","name":"stderr","text":', esc(text), "}"))
}

# The done event goes through the relay, behind all stderr text written so far. The next
# request waits for the relay's acknowledgement (usually there by then) before it begins, so
# nothing of it overtakes that done.
send_done <- function(line) {
  suspendInterrupts({
    writeBin(frame("D", charToRaw(line)), S$Y)
    S$unacked <- TRUE
  })
}

await_relay <- function() {
  if (isTRUE(S$unacked)) suspendInterrupts({
    readBin(S$Z, "raw", 1L)
    S$unacked <- FALSE
  })
}

# ------------------------------------------------------------------------------------------
# waiting for commands

open_wake <- function() {
  if (identical(Sys.getenv("CELLBOX_WAKE"), "stdin")) {
    # A byte on stdin per command (a container: PROTOCOL.md, "Waking the runner"). Opening the
    # pipe again through /dev/stdin gives a connection that reads what is there, blocking.
    con <- tryCatch(fifo("/dev/stdin", "rb", blocking = TRUE), error = function(e) NULL,
                    warning = function(w) NULL)
    if (is.null(con)) log_msg("no stdin to be woken on; polling every ", POLL * 1000, " ms")
    S$wake_kind <- if (is.null(con)) NULL else "stdin"
    return(con)
  }
  path <- file.path(S$channel, "host", "wake")
  if (nzchar(Sys.getenv("CELLBOX_RUNNER_NO_WAKE"))) {
    log_msg("wake-up FIFO disabled; polling every ", POLL * 1000, " ms")
    return(NULL)
  }
  # A blocking reader without a write end of our own, opened without blocking: open a
  # non-blocking reader, a (then possible) non-blocking writer, then the blocking reader, and
  # drop the first two. Read then returns 0 bytes (EOF) only when no host holds the FIFO.
  con <- tryCatch({
    if (!identical(file.info(path, extra_cols = FALSE)$isdir, FALSE)) stop("no FIFO")
    r0 <- fifo(path, "rb", blocking = FALSE)
    w0 <- fifo(path, "wb", blocking = FALSE)
    r <- fifo(path, "rb", blocking = TRUE)
    close(w0)
    close(r0)
    r
  }, error = function(e) NULL, warning = function(w) NULL)
  if (is.null(con)) log_msg("no wake-up FIFO at ", path, "; polling every ", POLL * 1000, " ms")
  S$wake_kind <- if (is.null(con)) NULL else "fifo"
  con
}

scan_commands <- function() {
  names <- list.files(S$cmd_dir, pattern = "\\.json$")
  # the host removes what was served; what it has not removed yet is not served again
  S$served <- S$served[S$served %in% names]
  names <- names[!(names %in% S$served)]
  if (length(names)) S$pending <- unique(c(S$pending, names))
}

check_channel <- function() {
  if (!dir.exists(S$kernel_dir) || !dir.exists(S$cmd_dir)) exit_now(0L)
}

# Block until the host says there may be a command (or poll once without the FIFO).
wait_commands <- function() {
  if (!is.null(S$wake)) {
    b <- tryCatch(readBin(S$wake, "raw", 4096L), error = function(e) NULL)
    if (!is.null(b) && !length(b)) {
      # EOF: no host holds the channel (it went away, or a pool keeps the kernel for the next
      # one). Exit if the channel went too; else wait in open() until a host opens the FIFO.
      # On stdin: the host's end is gone; scan every POLL seconds from now on.
      check_channel()
      close(S$wake)
      S$wake <- if (identical(S$wake_kind, "fifo"))
        tryCatch(fifo(file.path(S$channel, "host", "wake"), "rb", blocking = TRUE),
                 error = function(e) NULL)
      if (is.null(S$wake)) S$wake_kind <- NULL
    }
  } else {
    Sys.sleep(POLL)
    if (now() - S$last_check >= 1) {
      S$last_check <- now()
      check_channel()
    }
  }
  scan_commands()
}

# ------------------------------------------------------------------------------------------
# plots: every page of a device this runner opened becomes plots/<n>.png

plot_size <- function() {
  opt <- function(name, default) {
    v <- getOption(name)
    if (is.numeric(v) && length(v) == 1L && is.finite(v) && v > 0) v else default
  }
  res <- opt("repr.plot.res", PLOT_DEFAULTS[["res"]])
  c(round(opt("repr.plot.width", PLOT_DEFAULTS[["width"]]) * res),
    round(opt("repr.plot.height", PLOT_DEFAULTS[["height"]]) * res), res)
}

# What IRkernel shows as a plot's text/plain (repr's repr_text.recordedplot): the last title()
# of the page's display list, else "plot without title".
plot_text <- function(rec) {
  tryCatch({
    title <- NULL
    for (call in rev(rec[[1L]])) {
      args <- call[[2L]]
      if (isTRUE(args[[1L]]$name == "C_title") && !is.null(args[[2L]])) {
        title <- args[[2L]]
        break
      }
    }
    if (is.null(title)) PLOT_TEXT else sprintf("Plot with title %s", dQuote(title))
  }, error = function(e) PLOT_TEXT)
}

# Note the title of the current page of our current device (before a new page, at the end).
note_title <- function() {
  d <- grDevices::dev.cur()
  k <- match(d, S$devs)
  if (is.na(k)) return(invisible())
  rec <- tryCatch(grDevices::recordPlot(), error = function(e) NULL)
  if (!is.null(rec)) S$titles[[names(S$devs)[k]]] <- plot_text(rec)
  invisible()
}

open_device <- function(...) {
  S$dev_seq <- S$dev_seq + 1L
  size <- plot_size()
  pattern <- file.path(S$plot_dir, sprintf(".r%d-%%d.png", S$dev_seq))
  grDevices::png(pattern, width = size[1], height = size[2], res = size[3],
                 type = if (capabilities("cairo")) "cairo" else getOption("bitmapType"))
  grDevices::dev.control(displaylist = "enable")        # for the page's title
  S$devs <- c(S$devs, grDevices::dev.cur())
  S$opened <- TRUE
  names(S$devs)[length(S$devs)] <- S$dev_seq
  invisible()
}

png_size <- function(path) {
  b <- tryCatch(readBin(path, "raw", 24L), error = function(e) raw(0))
  if (length(b) < 24L || !identical(b[13:16], charToRaw("IHDR"))) return(c(0, 0))
  be <- function(x) sum(as.numeric(x) * 256^(3:0))
  c(be(b[17:20]), be(b[21:24]))
}

# Finished pages -> plots/<n>.png and display events. `final`: close our devices first.
collect_plots <- function(final = FALSE) {
  if (!length(S$devs) && !S$opened) return(invisible())
  if (final) S$opened <- FALSE
  open <- grDevices::dev.list()
  live <- S$devs[S$devs %in% open]
  if (final) {
    for (d in live) {
      tryCatch({ grDevices::dev.set(d); note_title() }, error = function(e) NULL)
      tryCatch(grDevices::dev.off(d), error = function(e) NULL)
    }
    S$devs <- integer(0)
    live <- integer(0)
  } else {
    S$devs <- live
  }
  files <- list.files(S$plot_dir, pattern = "^\\.r[0-9]+-[0-9]+\\.png$", all.files = TRUE)
  if (!length(files)) return(invisible())
  dev <- as.integer(sub("^\\.r([0-9]+)-.*", "\\1", files))
  page <- as.integer(sub("^\\.r[0-9]+-([0-9]+)\\.png$", "\\1", files))
  ord <- order(dev, page)
  files <- files[ord]; dev <- dev[ord]; page <- page[ord]
  # the newest page of a device still open is being drawn
  busy <- rep(FALSE, length(files))
  for (d in names(live)) {
    k <- which(dev == as.integer(d))
    if (length(k)) busy[k[which.max(page[k])]] <- TRUE
  }
  for (i in which(!busy)) {
    n <- S$plot_n + 1L
    to <- file.path(S$plot_dir, paste0(n, ".png"))
    if (!file.rename(file.path(S$plot_dir, files[i]), to)) next
    S$plot_n <- n
    size <- png_size(to)
    title <- S$titles[[as.character(dev[i])]]
    scale <- getOption("jupyter.plot_scale", PLOT_DEFAULTS[["scale"]])
    if (!is.numeric(scale) || length(scale) != 1L || !is.finite(scale) || scale <= 0) scale <- 1
    emit(list(type = "display", data = list(`text/plain` = if (is.null(title)) PLOT_TEXT else title),
              metadata = list(`image/png` = list(width = size[1] / scale,
                                                 height = size[2] / scale)),
              plot = list(index = n, path = paste0("plots/", n, ".png"), format = "png",
                          width = size[1], height = size[2])))
  }
  if (final) S$titles <- list()
  invisible()
}

before_new_page <- function(...) {
  if (length(S$devs)) suspendInterrupts(tryCatch(note_title(), error = function(e) NULL))
}

on_new_page <- function(...) {
  if (length(S$devs)) suspendInterrupts(tryCatch(collect_plots(FALSE), error = function(e)
    log_msg("plot capture: ", conditionMessage(e))))
}

init_plot_counter <- function() {
  names <- list.files(S$plot_dir, pattern = "^[0-9]+\\.png$")
  S$plot_n <- if (length(names)) max(as.integer(sub("\\.png$", "", names))) else 0L
}

clear_plots <- function() {
  names <- list.files(S$plot_dir, pattern = "\\.png(\\.tmp)?$", all.files = TRUE)
  counted <- grepl("^[0-9]+\\.png$", names)
  gone <- file.remove(file.path(S$plot_dir, names))
  S$plot_n <- 0L
  sum(gone & counted)
}

# ------------------------------------------------------------------------------------------
# running a cell

# The call a cell's expression runs in: IRkernel's (through the evaluate package), so that an
# error or warning at the top level names it as IRkernel does ("Error in eval(expr, envir,
# enclos): ...").
ours <- quote(eval(expr, envir, enclos))

# IRkernel's traceback: a call a line, "   # at line L of file <text>" where it has a source
# reference; a run of more than 3 equal calls (deep recursion) as the first, "⋯", the last
# (IRkernel 1.3.2 means to, and shows the calls' numbers instead: here the calls).
ELLIPSIS <- "\u22ef"

skip_repeated <- function(calls) {
  if (!length(calls)) return(calls)
  ctb <- vapply(calls, function(cl) paste(deparse(cl), collapse = "\n"), "")
  enc <- rle(ctb)
  i <- which.max(enc$lengths)
  if (enc$lengths[[i]] <= 3L) return(ctb)
  v <- enc$values[[i]]
  enc$lengths <- c(utils::head(enc$lengths, i - 1L), 1L, 1L, 1L, utils::tail(enc$lengths, -i))
  enc$values <- c(utils::head(enc$values, i - 1L), v, ELLIPSIS, v, utils::tail(enc$values, -i))
  inverse.rle(enc)
}

format_stack <- function(calls) {
  refs <- lapply(calls, function(cl) attr(cl, "srcref"))
  shown <- skip_repeated(calls)
  if (length(shown) != length(calls)) {      # runs folded: no source references to match
    refs <- vector("list", length(shown))
    texts <- strsplit(shown, "\n", fixed = TRUE)
  } else {
    texts <- lapply(calls, format)
  }
  vapply(seq_along(shown), function(k) {
    ref <- refs[[k]]
    at <- ""
    if (!is.null(ref)) {
      f <- ref[[1L]]; l <- ref[[3L]]
      at <- paste0("   # at line ", if (f == l) f else paste0(f, "-", l), " of file ",
                   attr(ref, "srcfile")$filename)
    }
    white <- strrep(" ", nchar(format(k)))
    lines <- texts[[k]]
    paste0(paste(paste0(c(k, rep(white, length(lines) - 1L)), ". ", lines), collapse = "\n"), at)
  }, "")
}

# The text of a condition as IRkernel gives it (toString(e): "Error in g(): msg\n").
condition_text <- function(e) tryCatch(toString(e), error = function(err)
  paste(utils::capture.output(utils::str(e)), collapse = "\n"))

# The warnings of a top-level expression, for warnings() (each was shown when it came).
flush_warnings <- function() {
  ws <- S$warnings
  S$warnings <- list()
  n <- length(ws)
  if (!n) return(invisible())
  lw <- lapply(ws, function(w) w$call)
  names(lw) <- vapply(ws, function(w) w$msg, "")
  set_base("last.warning", lw[seq_len(min(n, 50L))])
}

# A warning is shown at once, as IRkernel shows it: 'Warning message in f():\n“msg”\n'.
on_warning <- function(w) {
  warn <- getOption("warn", 0)
  if (is.numeric(warn) && warn >= 2) return()          # R makes it an error
  if (!is.numeric(warn) || warn >= 0) {
    call <- conditionCall(w)
    msg <- conditionMessage(w)
    emit_stderr(sprintf("Warning message%s:\n%s\n",
                        if (is.null(call)) "" else sprintf(" in %s", deparse(call)[[1L]]),
                        dQuote(msg)))
    if (length(S$warnings) < 50L) S$warnings[[length(S$warnings) + 1L]] <- list(msg = msg,
                                                                                call = call)
  }
  tryInvokeRestart("muffleWarning")
}

# message(): its text and a newline, as IRkernel writes it.
on_message <- function(m) {
  emit_stderr(paste0(conditionMessage(m), "\n"))
  tryInvokeRestart("muffleMessage")
}

# Calling handler for errors: keep the calls between the cell's eval() (the first of its kind
# above run_expr(), user code may call one alike; two frames, the closure's and its
# .Internal's) and the error for the traceback, as IRkernel does: without this handler's and
# the one before it (.handleSimpleError(), or the stop(cond) of a condition object).
on_error <- function(e) {
  calls <- sys.calls()
  n <- length(calls) - 2L
  top <- 0L
  for (i in seq_len(n)) {
    if (i > S$frame && identical(calls[[i]], ours)) {
      top <- i
      break
    }
  }
  while (top && top < n && identical(calls[[top + 1L]], ours)) top <- top + 1L
  S$tb <- if (top && n > top) calls[(top + 1L):n] else list()
}

# Whether the repr package is there (loaded once, at the first value shown).
have_repr <- function() {
  if (is.null(S$repr))
    S$repr <- isTRUE(tryCatch(suppressMessages(suppressWarnings(
      requireNamespace("repr", quietly = TRUE))), error = function(e) FALSE))
  S$repr
}

# One mime type's content of a value from repr, as IRdisplay sends it: text as one string,
# bytes (png, pdf) as base64; NULL when repr has none or it fails.
repr_mime <- function(value, mime) {
  tryCatch({
    f <- repr::mime2repr[[mime]]
    r <- if (is.null(f)) NULL else f(value)
    if (is.null(r)) NULL
    else if (is.raw(r)) jsonlite::base64_enc(r)
    else if (is.character(r)) paste(r, collapse = "\n")
    else NULL
  }, error = function(e) NULL)
}

# A visible value, as IRkernel displays it: repr's text/plain (nothing when it is empty: a
# ggplot or lattice object draws its plot), then, with jupyter.rich_display, every other mime
# type of jupyter.display_mimetypes that repr has for it. Without repr, and for help
# (jupyter.pager_classes, which IRkernel pages): print()'s text.
show_value <- function(value) {
  pager <- getOption("jupyter.pager_classes", c("packageIQR", "help_files_with_topic"))
  if (inherits(value, as.character(pager)) || !have_repr()) {      # help: print() pages it
    text <- utils::capture.output(if (isS4(value)) methods::show(value) else print(value))
    if (length(text))
      emit(list(type = "display", data = list(`text/plain` = paste(text, collapse = "\n"))))
    return(invisible())
  }
  text <- paste(repr::repr_text(value), collapse = "\n")
  if (!nzchar(text)) return(invisible())
  data <- list(`text/plain` = text)
  if (isTRUE(getOption("jupyter.rich_display", TRUE))) {
    mimes <- getOption("jupyter.display_mimetypes", DISPLAY_MIMES)
    for (mime in setdiff(as.character(mimes), "text/plain")) {
      r <- repr_mime(value, mime)
      if (!is.null(r)) data[[mime]] <- r
    }
  }
  ev <- list(type = "display", data = data)
  if (!is.null(data$`text/html`) && isTRUE(grepl("<html.*>", data$`text/html`, ignore.case = TRUE)))
    ev$metadata <- list(`text/html` = list(isolated = TRUE))
  emit(ev)
}

# Set a variable of base R's (it exists: see make_last_warning()).
set_base <- function(name, value) {
  env <- baseenv()
  locked <- bindingIsLocked(name, env)
  if (locked) unlockBinding(name, env)
  assign(name, value, envir = env)
  if (locked) lockBinding(name, env)
}

set_last_value <- function(value) set_base(".Last.value", value)

# base's `last.warning` (for warnings()) exists once R has printed deferred warnings: have it
# print one, into nothing.
make_last_warning <- function() {
  if (exists("last.warning", envir = baseenv(), inherits = FALSE)) return()
  sink_to <- textConnection(NULL, "w")
  sink(sink_to, type = "message")
  on.exit({ sink(type = "message"); close(sink_to) })
  (function() warning("cellbox"))()
  .Internal(printDeferredWarnings())
  set_base("last.warning", NULL)
}

# An error as IRkernel stores it: ename ERROR, evalue toString(e), the traceback its first
# line and "Traceback:", then the calls that led there.
error_event <- function(e) {
  calls <- S$tb
  S$tb <- NULL
  S$last_tb <- if (length(calls)) rev(calls) else NULL      # for traceback()
  text <- condition_text(e)
  emit(list(type = "error", ename = "ERROR", evalue = text,
            traceback = as.list(c(paste0(text, "Traceback:\n"), format_stack(calls)))))
}

# Evaluate one top-level expression; "ok" or "error".
run_expr <- function(expr, silent) {
  envir <- globalenv()
  enclos <- baseenv()
  S$warnings <- list()
  S$tb <- NULL
  S$frame <- sys.nframe()
  res <- tryCatch(withCallingHandlers({
      r <- withVisible(eval(expr, envir, enclos))
      set_last_value(r$value)
      if (r$visible && !silent) show_value(r$value)
      NULL
    }, warning = on_warning, message = on_message, error = on_error),
    error = function(e) e)
  flush_warnings()
  if (inherits(res, "error")) {
    error_event(res)
    return("error")
  }
  "ok"
}

# The cell's source file is named "<text>", as the evaluate package names IRkernel's.
parse_cell <- function(code) {
  tryCatch(parse(text = code, keep.source = TRUE, srcfile = srcfilecopy("<text>", code)),
           error = function(e) e)
}

run_cell <- function(code, silent) {
  exprs <- parse_cell(code)
  if (inherits(exprs, "error")) {                      # as the evaluate package reports it
    exprs$call <- quote(parse(text = x, srcfile = src))
    S$tb <- list()
    error_event(exprs)
    return("error")
  }
  for (i in seq_along(exprs))
    if (run_expr(exprs[[i]], silent) != "ok") return("error")
  "ok"
}

do_execute <- function(req) {
  code <- req$code
  if (is.null(code)) code <- ""
  if (!is.character(code) || length(code) != 1L) request_error("execute: 'code' must be a string")
  silent <- isTRUE(req$silent)
  S$allow_stdin <- isTRUE(req$allow_stdin)
  if (isTRUE(req$clear_plots)) clear_plots()
  if (!silent) S$count <- S$count + 1L
  if (!sink.number()) sink(S$X)                        # user code may have taken ours off
  # an interrupt that came between requests is not for this cell
  tryCatch(allowInterrupts(Sys.sleep(0)), interrupt = function(e) NULL)
  status <- tryCatch(allowInterrupts(run_cell(code, silent)), interrupt = function(e) {
    emit(list(type = "error", ename = "interrupt", evalue = "interrupted",
              traceback = list("Interrupted")))
    "aborted"
  })
  plots <- tryCatch({ collect_plots(TRUE); "ok" }, error = function(e) {
    error_event(e)
    "error"
  })
  if (status == "ok" && plots != "ok") status <- "error"
  status
}

# ------------------------------------------------------------------------------------------
# other requests

line_of <- function(code, pos) {
  if (is.null(pos) || !is.numeric(pos)) pos <- nchar(code)
  before <- substr(code, 1L, pos)
  nl <- gregexpr("\n", before, fixed = TRUE)[[1L]]
  start <- if (nl[1L] > 0L) max(nl) else 0L
  list(line = substr(before, start + 1L, nchar(before)), offset = start, pos = pos)
}

do_complete <- function(req) {
  code <- req$code
  if (!is.character(code)) code <- ""
  l <- line_of(code, req$cursor_pos)
  utils:::.assignLinebuffer(l$line)
  utils:::.assignEnd(nchar(l$line))
  utils:::.guessTokenFromLine()
  utils:::.completeToken()
  matches <- utils:::.retrieveCompletions()
  start <- l$offset + utils:::.CompletionEnv[["start"]]
  emit(list(type = "reply", matches = as.list(as.character(matches)),
            cursor_start = start, cursor_end = l$pos))
  "ok"
}

# The name around the cursor (letters, digits, '.', '_', '::').
token_at <- function(code, pos) {
  if (is.null(pos) || !is.numeric(pos)) pos <- nchar(code)
  chars <- strsplit(code, "")[[1L]]
  ok <- grepl("[[:alnum:]._:]", chars)
  a <- pos
  while (a >= 1L && ok[a]) a <- a - 1L
  b <- pos + 1L
  while (b <= length(chars) && ok[b]) b <- b + 1L
  tok <- paste(chars[seq_len(b - a - 1L) + a], collapse = "")
  sub("^:+", "", sub(":+$", "", tok))
}

help_text <- function(topic) {
  parts <- strsplit(topic, ":::?")[[1L]]
  h <- if (length(parts) == 2L) utils::help(parts[2L], package = (parts[1L])) else utils::help((topic))
  if (!length(h)) return(NULL)
  rd <- utils:::.getHelpFile(h[1L])
  f <- tempfile()
  on.exit(unlink(f))
  tools::Rd2txt(rd, out = f, options = list(underline_titles = FALSE))
  paste(readLines(f, warn = FALSE), collapse = "\n")
}

do_inspect <- function(req) {
  code <- req$code
  if (!is.character(code)) code <- ""
  name <- token_at(code, req$cursor_pos)
  text <- NULL
  if (nzchar(name)) {
    text <- tryCatch(suppressWarnings(help_text(name)), error = function(e) NULL)
    if (is.null(text)) {
      obj <- tryCatch(eval(str2lang(name), globalenv()), error = function(e) e)
      if (!inherits(obj, "error"))
        text <- paste(utils::capture.output(utils::str(obj)), collapse = "\n")
    }
  }
  emit(list(type = "reply", found = !is.null(text),
            data = if (is.null(text)) empty_object() else list(`text/plain` = text)))
  "ok"
}

# Unclosed brackets outside strings and comments.
bracket_depth <- function(code) {
  chars <- strsplit(code, "")[[1L]]
  depth <- 0L
  q <- ""
  i <- 1L
  while (i <= length(chars)) {
    ch <- chars[i]
    if (nzchar(q)) {
      if (ch == "\\") i <- i + 1L else if (ch == q) q <- ""
    } else if (ch == "#") {
      while (i <= length(chars) && chars[i] != "\n") i <- i + 1L
    } else if (ch %in% c("'", '"', "`")) {
      q <- ch
    } else if (ch %in% c("(", "[", "{")) {
      depth <- depth + 1L
    } else if (ch %in% c(")", "]", "}")) {
      depth <- max(0L, depth - 1L)
    }
    i <- i + 1L
  }
  depth
}

do_is_complete <- function(req) {
  code <- req$code
  if (!is.character(code)) code <- ""
  e <- tryCatch({ parse(text = code, keep.source = FALSE); NULL }, error = function(e) e)
  status <- "complete"
  if (!is.null(e)) {
    msg <- conditionMessage(e)
    lines <- length(strsplit(code, "\n", fixed = TRUE)[[1L]]) + endsWith(code, "\n")
    at <- suppressWarnings(as.integer(sub("^<text>:([0-9]+):.*", "\\1", msg)))
    status <- if (grepl("INCOMPLETE_STRING", msg, fixed = TRUE) ||
                  (!is.na(at) && at > lines)) "incomplete" else "invalid"
  }
  indent <- if (status == "incomplete") strrep("  ", bracket_depth(code)) else ""
  emit(list(type = "reply", status = status, indent = indent))
  "ok"
}

do_clear_plots <- function(req) {
  emit(list(type = "reply", cleared = clear_plots()))
  "ok"
}

do_shutdown <- function(req) "ok"

HANDLERS <- list(execute = do_execute, complete = do_complete, inspect = do_inspect,
                 is_complete = do_is_complete, clear_plots = do_clear_plots,
                 shutdown = do_shutdown)

request_error <- function(msg) stop(structure(class = c("cellbox_request_error", "error",
                                                        "condition"),
                                              list(message = msg, call = NULL)))

# ------------------------------------------------------------------------------------------
# readline() in a cell

ask <- function(prompt) {
  if (!S$allow_stdin || is.null(S$req_id)) stop(NO_STDIN_MSG, call. = FALSE)
  emit(list(type = "input_request", prompt = as.character(prompt), password = FALSE))
  # the answer to the k-th input request of the request; host/ is read-only: it stays until
  # the host removes it, so each is read once
  S$input_n <- S$input_n + 1L
  path <- file.path(S$cmd_dir, paste0(S$req_id, ".", S$input_n, ".input"))
  repeat {
    if (file.exists(path)) {
      data <- tryCatch(readBin(path, "raw", 16777216L), error = function(e) raw(0))
      text <- decode(data)
      obj <- tryCatch(jsonlite::parse_json(text), error = function(e) NULL)
      value <- if (is.list(obj)) obj$value else if (is.character(obj)) obj else sub("\n$", "", text)
      if (is.null(value)) value <- ""
      return(as.character(value)[1L])
    }
    # the host writes a wake-up byte after the answer, and after SIGINT
    suspendInterrupts(wait_commands())
    Sys.sleep(0)                                  # lets a pending interrupt in
  }
}

# ------------------------------------------------------------------------------------------
# requests

valid_id <- function(rid) {
  is.character(rid) && length(rid) == 1L && !is.na(rid) && nchar(rid, "bytes") > 0L &&
    nchar(rid, "bytes") <= 200L && grepl("^[!-~]+$", rid, useBytes = TRUE) &&
    !startsWith(rid, ".") && !grepl("/", rid, fixed = TRUE)
}

serve <- function(fname) {
  path <- file.path(S$cmd_dir, fname)
  if (fname %in% S$served) return(invisible())     # already served
  S$served <- c(S$served, fname)
  size <- file.size(path)
  if (is.na(size)) return(invisible())             # gone (the host removed it)
  data <- tryCatch(readBin(path, "raw", max(size, 1)), error = function(e) NULL)
  req <- NULL
  bad <- "cannot read the command file"
  if (!is.null(data)) {
    req <- tryCatch({
      r <- jsonlite::parse_json(decode(data), simplifyVector = FALSE)
      if (!is.list(r) || is.null(names(r))) stop("a request must be a JSON object")
      r
    }, error = function(e) {
      bad <<- conditionMessage(e)
      NULL
    })
  }
  rid <- if (!is.null(req)) req$id else NULL
  if (!valid_id(rid)) {
    stem <- sub("\\.json$", "", fname)
    if (!is.null(rid)) log_msg(fname, ": invalid id, using ", stem)
    rid <- if (valid_id(stem)) stem else NULL
  }
  if (is.null(rid)) {
    log_msg("dropped command file ", fname, " (", bad, ")")
    return(invisible())
  }
  S$req_id <- rid
  S$input_n <- 0L
  await_relay()
  suspendInterrupts(writeBin(frame("B", charToRaw(rid)), S$X))
  t0 <- now()
  kind <- if (!is.null(req)) req$kind else NULL
  status <- tryCatch({
    if (is.null(req)) request_error(paste0("malformed command file ", fname, ": ", bad))
    handler <- if (is.character(kind) && length(kind) == 1L) HANDLERS[[kind]] else NULL
    if (is.null(handler)) request_error(paste0("unknown request kind '", format(kind), "'"))
    handler(req)
  }, cellbox_request_error = function(e) {
    log_msg("bad request ", rid, ": ", conditionMessage(e))
    emit(list(type = "error", ename = "RequestError", evalue = conditionMessage(e),
              traceback = list(conditionMessage(e))))
    "error"
  }, error = function(e) {
    log_msg("request ", rid, " (", format(kind), ") failed: ", conditionMessage(e))
    emit(list(type = "error", ename = class(e)[1L], evalue = conditionMessage(e),
              traceback = list(paste0("cellbox runner: request ", rid, " failed"),
                               conditionMessage(e))))
    "error"
  })
  finish(status, t0)
  if (identical(kind, "shutdown")) {
    await_done_written(rid)
    exit_now(0L)
  }
}

# The done of a shutdown in the results file before the kernel exits (at most 2 s): the reader
# writes it after the relay passed it on, and a host or test that sees the kernel gone first
# takes the request for dead.
await_done_written <- function(rid) {
  await_relay()
  path <- file.path(S$res_dir, paste0(rid, ".jsonl"))
  for (i in seq_len(200L)) {
    if (utils::file_test("-f", path)) {               # a regular file: never a FIFO's wait
      size <- file.size(path)
      tail <- tryCatch(local({
        con <- file(path, "rb")
        on.exit(close(con))
        if (size > 200) seek(con, size - 200)
        rawToChar(readBin(con, "raw", 200L))
      }), error = function(e) "")
      if (grepl('"type":"done"', tail, fixed = TRUE)) return(invisible())
    }
    Sys.sleep(0.01)
  }
}

finish <- function(status, t0) {
  S$allow_stdin <- FALSE        # an answer that came too late is the host's to remove
  tryCatch(flush(stdout()), error = function(e) NULL)           # C code's stdio buffer
  send_done(sprintf('{"type":"done","status":"%s","execution_count":%d,"duration":%.6f}',
                    status, S$count, now() - t0))
  S$req_id <- NULL
}

# Exit. The helpers go by themselves: their pipes' last writers are gone (EOF), after they
# passed on what was written. A done on its way is waited for first: without it, the done of
# a shutdown was lost 5 times in 6 once the repr package had been loaded.
exit_now <- function(code) {
  await_relay()
  sink()
  S$quit(save = "no", status = code, runLast = TRUE)
}

# ------------------------------------------------------------------------------------------
# the session's R

install_overrides <- function() {
  # in base and its namespace: user code and base's own functions (menu()...) see the same
  replace <- function(name, value) {
    for (env in list(baseenv(), .BaseNamespaceEnv)) {
      locked <- bindingIsLocked(name, env)
      if (locked) unlockBinding(name, env)
      assign(name, value, envir = env)
      if (locked) lockBinding(name, env)
    }
  }
  S$quit <- base::quit
  traceback0 <- base::.traceback
  replace("readline", function(prompt = "") ask(prompt))
  replace(".traceback", function(x = NULL, ...) traceback0(if (is.null(x)) S$last_tb else x, ...))
  stay <- function(save = "default", status = 0, runLast = TRUE) {
    message("cellbox: quit() does not end this session; the session ends when cellbox ",
            "closes it")
    invisible()
  }
  replace("quit", stay)
  replace("q", stay)
  options(device = open_device, pager = function(files, header, title, delete.file) {
    text <- paste(unlist(lapply(files, readLines, warn = FALSE)), collapse = "\n")
    if (isTRUE(delete.file)) unlink(files)
    emit(list(type = "display", data = list(`text/plain` = gsub("_\b", "", text,
                                                                 fixed = TRUE)),
              pager = TRUE))
  }, keep.source = TRUE, bitmapType = if (capabilities("cairo")) "cairo" else "Xlib",
  help_type = "text")
  setHook("before.plot.new", before_new_page)
  setHook("before.grid.newpage", before_new_page)
  setHook("plot.new", on_new_page)
  setHook("grid.newpage", on_new_page)
  utils::rc.settings(ipck = TRUE)
  if (identical(Sys.getenv("CELLBOX_NETWORK"), "none")) {
    ns <- asNamespace("utils")
    no_net <- function(...) stop("cellbox: install.packages() needs the network, and this ",
                                 "sandbox has no network (network = none); start cellbox with ",
                                 "--network bridge to allow it", call. = FALSE)
    unlockBinding("install.packages", ns)
    assign("install.packages", no_net, envir = ns)
    lockBinding("install.packages", ns)
    if ("package:utils" %in% search()) {
      env <- as.environment("package:utils")
      unlockBinding("install.packages", env)
      assign("install.packages", no_net, envir = env)
      lockBinding("install.packages", env)
    }
  }
}

write_ready <- function() {
  v <- R.version
  version <- paste(v$major, v$minor, sep = ".")
  info <- list(protocol = PROTOCOL, pid = Sys.getpid(), kernel = "r", language = "R",
               version = version, r = version, cwd = getwd(),
               kernelspec = list(display_name = "R", language = "R", name = "ir"),
               language_info = list(name = "R", version = version,
                                    mimetype = "text/x-r-source", codemirror_mode = "r",
                                    pygments_lexer = "r", file_extension = ".r"))
  if (!is.null(S$wake)) info$wake <- S$wake_kind
  # The host made kernel/ready (the top of the kernel part is not ours to write): one line in
  # one write, which the host takes once it ends with a newline.
  con <- file(file.path(S$kernel_dir, "ready"), "wb")
  writeBin(charToRaw(paste0(json(info), "\n")), con)
  close(con)
}

# What Rscript attaches when nobody says otherwise, in its order on the search path.
attach_default_packages <- function() {
  if (!identical(Sys.getenv("R_DEFAULT_PACKAGES"), "NULL")) return(invisible())
  Sys.unsetenv("R_DEFAULT_PACKAGES")         # R started from a cell gets the usual ones
  pkgs <- c("datasets", "utils", "grDevices", "graphics", "stats", "methods")
  for (p in c("methods", setdiff(pkgs, "methods")))    # each goes in front of the last
    suppressPackageStartupMessages(library(p, character.only = TRUE))
  options(defaultPackages = pkgs)
}

main <- function(argv) {
  if (length(argv) != 1L) {
    cat("usage: Rscript runner.R CHANNEL_DIR\n", file = stderr())
    quit(save = "no", status = 2L)
  }
  S$channel <- normalizePath(argv[1L], mustWork = FALSE)
  S$cmd_dir <- file.path(S$channel, "host", "commands")
  S$kernel_dir <- file.path(S$channel, "kernel")
  S$res_dir <- file.path(S$kernel_dir, "results")
  S$plot_dir <- file.path(S$kernel_dir, "plots")
  S$log <- file(file.path(S$kernel_dir, "log"), "a")
  S$last_check <- now()
  S$pending <- character(0)
  S$served <- character(0)
  S$input_n <- 0L
  started <- tryCatch({
    if (!isTRUE(l10n_info()[["UTF-8"]]))
      suppressWarnings(Sys.setlocale("LC_CTYPE", "C.UTF-8"))
    # random, without touching the user's random number generator (.Random.seed)
    rnd <- file("/dev/urandom", "rb", raw = TRUE)
    S$mark <- c(as.raw(0x1eL), readBin(rnd, "raw", 15L))
    close(rnd)
    # The helpers first, while this R is small (the host starts it with
    # R_DEFAULT_PACKAGES=NULL): they share its pages and stay small.
    setup_capture()
    if (!requireNamespace("jsonlite", quietly = TRUE))
      stop("the R kernel needs the jsonlite package (Debian: apt-get install r-cran-jsonlite)")
    S$fast_esc <- tryCatch(get("C_escape_chars", asNamespace("jsonlite")),
                           error = function(e) NULL)
    attach_default_packages()
    S$wake <- open_wake()
    init_plot_counter()
    make_last_warning()
    install_overrides()
    scan_commands()
    write_ready()
    TRUE
  }, error = function(e) {
    log_msg("start-up failed: ", conditionMessage(e))
    FALSE
  })
  if (!started) {
    if (length(S$helpers)) tools::pskill(S$helpers, tools::SIGKILL)
    quit(save = "no", status = 1L)
  }
  repeat {
    tryCatch({
      if (length(S$pending)) {
        name <- sort(S$pending, method = "radix")[1L]
        S$pending <- S$pending[S$pending != name]
        serve(name)
      } else {
        wait_commands()
      }
    }, interrupt = function(e) NULL, error = function(e) log_msg("main loop: ",
                                                                 conditionMessage(e)))
  }
}

# Interrupts are let in only where a cell runs (allowInterrupts in do_execute): everywhere else
# a SIGINT stays pending, and the next cell drops it.
suspendInterrupts(main(commandArgs(trailingOnly = TRUE)))
