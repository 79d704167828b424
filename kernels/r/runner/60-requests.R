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

