int h() { return undeclared_name; }
