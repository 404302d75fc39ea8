package progress

// Nop is what a caller that passes no Reporter gets: it must stay one.
// (The package holds no statements to cover: an interface and Nop's empty
// methods; this file fails to compile when Nop stops being a Reporter.)
var _ Reporter = Nop{}
