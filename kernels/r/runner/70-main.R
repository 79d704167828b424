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
