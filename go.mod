module github.com/mcplisten/listen

go 1.25
