#!/bin/sh
echo 0,0
