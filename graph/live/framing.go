package live

import (
	"bytes"
	"io"
	"net/http"
)

// EventFramer frames the answer to a query or mutation whose client prefers
// text/event-stream as GraphQL over SSE's "distinct connections" mode: one
// next event carrying the response, then complete. Only a 2xx answer (an
// executed operation, or its Idempotency-Key replay) is framed; a refusal
// keeps its JSON error body and status, as a subscription refused before
// its stream starts does. The handler writes the response as JSON, so the
// response cache and the Idempotency-Key store keep one form of it, framed
// again for each request that asks for events.
type EventFramer struct {
	http.ResponseWriter
	started, framing, opened bool
}

// EventStreamType is the media type of Server-Sent Events.
const EventStreamType = "text/event-stream"

var (
	eventNext     = []byte("event: next\ndata: ")
	eventEnd      = []byte("\n\n")
	eventComplete = []byte("event: complete\ndata:\n\n")
	// eventDataLine continues an event's data on its next line: a client
	// joins the lines of data with "\n", giving the response back.
	eventDataLine = []byte("\ndata: ")
)

func (f *EventFramer) WriteHeader(code int) {
	if !f.started {
		f.started = true
		if code >= 200 && code < 300 {
			f.framing = true
			h := f.Header()
			h.Set("Content-Type", EventStreamType)
			h.Del("Content-Length")
			h.Del("ETag")
		}
	}
	f.ResponseWriter.WriteHeader(code)
}

func (f *EventFramer) Write(b []byte) (int, error) {
	if !f.started {
		f.WriteHeader(http.StatusOK)
	}
	if !f.framing {
		return f.ResponseWriter.Write(b)
	}
	if !f.opened {
		f.opened = true
		if _, err := f.ResponseWriter.Write(eventNext); err != nil {
			return 0, err
		}
	}
	if err := writeEventData(f.ResponseWriter, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// writeEventData writes b as the data of an event: a line break in b (JSON
// whitespace; strings escape theirs) starts another data line, and a
// carriage return, which would end the line too, is dropped.
func writeEventData(w io.Writer, b []byte) error {
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			_, err := w.Write(b)
			return err
		}
		if _, err := w.Write(b[:i]); err != nil {
			return err
		}
		if b[i] == '\n' {
			if _, err := w.Write(eventDataLine); err != nil {
				return err
			}
		}
		b = b[i+1:]
	}
	return nil
}

// End completes a framed answer once the handler is done.
func (f *EventFramer) End() {
	if !f.framing {
		return
	}
	if f.opened {
		_, _ = f.ResponseWriter.Write(eventEnd)
	}
	_, _ = f.ResponseWriter.Write(eventComplete)
}

func (f *EventFramer) Unwrap() http.ResponseWriter { return f.ResponseWriter }
