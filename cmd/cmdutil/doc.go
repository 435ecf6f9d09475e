// Package cmdutil is what kcltool's command packages share: the Factory
// that hands them clients, the IO streams, the printer and its one table
// engine, errors and exit codes (and SayFlags, which names flags in them),
// KCLTOOL_* variables, the flags every lease-table command has, and the
// formatting of durations, cells and JSON values. It holds no command of
// its own; cmd assembles the tree from the packages that do.
package cmdutil
