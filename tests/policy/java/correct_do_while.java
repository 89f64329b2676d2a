// expect: none
public class SumCalculator {
    public static void main(String[] args) {
        int total = 0, n = 1;
        do {
            total += n;
            n += 1;
        } while (n <= 100);
        System.out.println("Total = " + total);
    }
}
