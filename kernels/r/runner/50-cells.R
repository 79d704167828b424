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

