// Package temporal runs rein flows on Temporal.
package temporal
