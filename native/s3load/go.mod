module backupbench/native/s3load

go 1.22
