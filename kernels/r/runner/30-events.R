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

