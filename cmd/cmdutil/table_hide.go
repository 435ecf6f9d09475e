package cmdutil

import (
	"fmt"
	"slices"
	"strings"
)

// This file lets a fitted table drop columns before it breaks identifiers.
// Wrapping prose, lists and headers reads well; breaking a shard id or a
// worker id over two lines does not, and leases ls or lineage with every
// column cannot fit 80 columns without it. So a command names the columns
// it can spare (SUBSEQ, SWITCHES, …), most expendable first; when the table
// would otherwise need its identifiers broken, those go, one at a time,
// until it fits, and one line on stderr says which went and how to see
// them (-o wide, --columns). --columns is a choice the user made: nothing
// is hidden then.

// Spare names the columns the next table may hide to fit the terminal,
// the first named going first. A table prints every column when it fits,
// without a terminal, and in every format but table.
func (p *Printer) Spare(columns ...string) { p.spare = columns }

// gentleRounds is how many of fitWidths' rounds narrow a table without
// breaking its data inside a word: headers after dashes, text between
// words and after dashes.
const gentleRounds = 2

// hideToFit returns the indices of the columns to print (nil: all) after
// dropping spare ones until the gentle rounds fit width; widths and cols
// are cut down to the kept columns.
func hideToFit(header []string, spare []string, widths *[]int, cols *[]colFit, width int) (keep []int, hidden []string) {
	if len(spare) == 0 || fitNeed(*widths, *cols, width, gentleRounds) <= 0 {
		return nil, nil
	}
	keep = make([]int, len(*widths))
	for j := range keep {
		keep[j] = j
	}
	for _, name := range spare {
		j := slices.IndexFunc(keep, func(k int) bool { return k < len(header) && header[k] == name })
		if j < 0 {
			continue
		}
		hidden = append(hidden, name)
		keep = slices.Delete(keep, j, j+1)
		*widths = slices.Delete(*widths, j, j+1)
		*cols = slices.Delete(*cols, j, j+1)
		if fitNeed(*widths, *cols, width, gentleRounds) <= 0 {
			break
		}
	}
	if len(hidden) == 0 {
		return nil, nil
	}
	return keep, hidden
}

// fitNeed is how many columns a table is still too wide after the first
// rounds of fitting (widths are not changed).
func fitNeed(widths []int, cols []colFit, width, rounds int) int {
	return fitWidthsRounds(slices.Clone(widths), cols, width, rounds)
}

// hiddenNote is the stderr line that says what a fitted table left out.
func hiddenNote(hidden []string, width int) string {
	return fmt.Sprintf("kcltool: %s hidden to fit %d columns (-o wide or --columns shows %s)",
		strings.Join(hidden, ", "), width, map[bool]string{true: "it", false: "them"}[len(hidden) == 1])
}

// project keeps the cells at keep's indices, in buf.
func projectCells(cells []string, keep []int, buf []string) []string {
	buf = buf[:0]
	for _, k := range keep {
		if k < len(cells) {
			buf = append(buf, cells[k])
		} else {
			buf = append(buf, "")
		}
	}
	return buf
}
