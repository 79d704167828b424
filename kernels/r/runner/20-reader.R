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

