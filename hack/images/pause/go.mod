module vworkspace.io/tools/pause

go 1.26
