package assignment

// workerQueue stands for the decider's PriorityQueue of workers, highest
// key first. The key is computed when a worker is added, as the KCL's heap
// compares at insertion (a worker's metrics change only while it is out
// of the queue).
//
// Ties: the KCL's heap breaks them by its internal layout, which in
// practice hands the leases of a fleet of idle workers to the first and
// last worker of the heap by turns. Here a tie goes to the worker holding
// the fewest leases in the view, then to the earliest in worker-id order,
// so that idle workers share evenly.
type workerQueue struct {
	key    func(*worker) float64
	leases map[string][]*lease
	ws     []*worker
	keys   []float64
}

func (q *workerQueue) add(w *worker) {
	q.ws = append(q.ws, w)
	q.keys = append(q.keys, q.key(w))
}

// poll removes and returns the worker with the highest key, nil when empty.
func (q *workerQueue) poll() *worker {
	if len(q.ws) == 0 {
		return nil
	}
	best := 0
	for i := 1; i < len(q.ws); i++ {
		if q.better(i, best) {
			best = i
		}
	}
	w := q.ws[best]
	q.ws = append(q.ws[:best], q.ws[best+1:]...)
	q.keys = append(q.keys[:best], q.keys[best+1:]...)
	return w
}

func (q *workerQueue) better(i, j int) bool {
	ki, kj := q.keys[i], q.keys[j]
	if ki != kj && !(ki != ki && kj != kj) { // NaN ties with NaN
		if ki != ki {
			return false // NaN sorts last
		}
		if kj != kj {
			return true
		}
		return ki > kj
	}
	ni, nj := len(q.leases[q.ws[i].id]), len(q.leases[q.ws[j].id])
	if ni != nj {
		return ni < nj
	}
	return q.ws[i].order < q.ws[j].order
}
