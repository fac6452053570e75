package core_test

import "math"

func nanValue() float64 { return math.NaN() }
