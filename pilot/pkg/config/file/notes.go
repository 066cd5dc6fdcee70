package file

import "sort"

// fileNotes are what a file's last parse said about its objects, for the
// log: which objects it rejected, which it accepted, and which unknown
// fields it dropped. Objects are named as crd.Document.Object names them
// ("VirtualService ns/name"; "<unknown>" when the document cannot be read).
type fileNotes struct {
	broken  map[string]bool
	valid   map[string]bool
	dropped []droppedField
}

// droppedField is one unknown field dropped from one object.
type droppedField struct {
	object, field string
	line          int // where the object's document starts
}

func (n *fileNotes) reject(object string) {
	if n.broken == nil {
		n.broken = map[string]bool{}
	}
	n.broken[object] = true
}

func (n *fileNotes) accept(object string) {
	if n.valid == nil {
		n.valid = map[string]bool{}
	}
	n.valid[object] = true
}

// logFixed logs at INFO each object of path that prev rejected and next
// accepts: the object is served as written again.
func logFixed(path string, prev, next *fileState) {
	if prev == nil || len(prev.notes.broken) == 0 {
		return
	}
	unread := false
	var fixed []string
	for obj := range prev.notes.broken {
		switch {
		case next.notes.broken[obj]:
		case obj == unknownObject:
			unread = true
		case next.notes.valid[obj]:
			fixed = append(fixed, obj)
		}
	}
	sort.Strings(fixed)
	for _, obj := range fixed {
		scope.Infof("%s: %s is valid again; serving it as written", path, obj)
	}
	if unread && len(next.notes.broken) == 0 {
		scope.Infof("%s: every document is valid again", path)
	}
}

// unknownObject is how crd.Document.Object names a document it could not read.
const unknownObject = "<unknown>"

// droppedLog remembers the dropped unknown fields already logged, so each
// is logged at WARN once while it stays in its file, not on every re-read.
type droppedLog struct {
	logged map[string]bool // path, object and field
}

// update logs the dropped fields of files not logged yet and forgets those
// no longer dropped (a field removed then added back is logged again).
func (l *droppedLog) update(files map[string]*fileState) {
	current := map[string]bool{}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		for _, d := range files[p].notes.dropped {
			k := p + "\x00" + d.object + "\x00" + d.field
			current[k] = true
			if !l.logged[k] {
				scope.Warnf("%s:%d %s: unknown field %s dropped (Istio drops it silently; listed on /debug/warningz)",
					p, d.line, d.object, d.field)
			}
		}
	}
	l.logged = current
}
