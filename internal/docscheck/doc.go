// Package docscheck holds the tests that keep the repository's documents
// honest; it has no code of its own.
//
//   - TestREADMEQuotesPerformance: every figure README.md quotes is in
//     docs/performance.md, where each figure stands beside the command that
//     printed it. A figure is a number with a unit (ns, µs, ms, s, B, KB,
//     MB, GB, bytes, x, ×, %) outside code: "7.38 ns", "3.07 s", "26x".
//     Settings are not figures: write them as code (`2*time.Second`) or in
//     words ("every 30 seconds").
//   - TestLinksResolve: every relative link in the repository's Markdown
//     files names a file or folder that exists, and a #fragment into a
//     Markdown file names one of its headings.
//   - TestOneGoDirective: every go.mod has the same go directive, the Go
//     version README.md asks for.
//
// The tests read the files from the repository's root, two folders up.
package docscheck
