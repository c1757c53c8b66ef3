// Package browser drives the server's own pages in a headless Chromium (/usr/bin/chromium, or chromium
// on the PATH; without it the tests skip, unless CI is set): the waiting room, from the pre-queue's
// countdown and a falling rank to the seat map and a booking, and the operator's control room. Each test
// runs a server in its process (apptest.Start) and keeps its screenshots as test artifacts (go test
// -artifacts).
package browser
