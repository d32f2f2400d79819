package authflows

// STUB: replaced by the embedded common-password list.
func isCommonPassword(password string) bool { return password == "passwordpassword" }
