// libedit (Debian: libedit-dev) through its readline-compatible interface: line editing and
// history for `tapemu transmit --interactive`. Only Sources/tapemu/CLI/LineEditor.swift imports it.
#include <stdio.h>
#include <stdlib.h>
#include <editline/readline.h>
