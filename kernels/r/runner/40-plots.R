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

